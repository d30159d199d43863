package santls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"
)

func issue(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(time.Hour)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func TestVerifierChecksTheChainAndTheSubjectAltNames(t *testing.T) {
	ca, caKey := issue(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign})
	other, _ := issue(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "other"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign})
	spiffe, _ := url.Parse("spiffe://abc.example.com/test-identity")
	leaf, _ := issue(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "backend"},
		DNSNames: []string{"abc.example.com", "*.wild.example.com"}, URIs: []*url.URL{spiffe},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	otherRoots := x509.NewCertPool()
	otherRoots.AddCert(other)
	state := tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	for _, c := range []struct {
		name  string
		roots *x509.CertPool
		sans  SubjectAltNames
		want  string // "" = accepted, else part of the error
	}{
		{"dns", roots, SubjectAltNames{DNS: []string{"abc.example.com"}}, ""},
		{"dns case", roots, SubjectAltNames{DNS: []string{"ABC.example.com"}}, ""},
		{"dns under a wildcard", roots, SubjectAltNames{DNS: []string{"x.wild.example.com"}}, ""},
		{"dns mismatch", roots, SubjectAltNames{DNS: []string{"dce.example.com"}}, "none of the subjectAltNames"},
		{"uri", roots, SubjectAltNames{URI: []string{"spiffe://abc.example.com/test-identity"}}, ""},
		{"uri mismatch", roots, SubjectAltNames{URI: []string{"spiffe://def.example.com/test-identity"}}, "none of"},
		{"one of several", roots, SubjectAltNames{URI: []string{"spiffe://def.example.com/x"}, DNS: []string{"abc.example.com"}}, ""},
		{"untrusted chain", otherRoots, SubjectAltNames{DNS: []string{"abc.example.com"}}, "unknown authority"},
	} {
		err := Verifier(c.roots, c.sans)(state)
		if c.want == "" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if Verifier(roots, SubjectAltNames{DNS: []string{"abc.example.com"}})(tls.ConnectionState{}) == nil {
		t.Error("no certificate: accepted")
	}
}
