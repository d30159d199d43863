package santls

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
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

func pemOf(t *testing.T, cert *x509.Certificate, key *ecdsa.PrivateKey) (string, string) {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
}

// A backend that requires a client certificate from clientCA gets the one in the config.
func TestTransportPresentsTheInlineClientCertificate(t *testing.T) {
	ca, caKey := issue(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "client ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign})
	client, clientKey := issue(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "gateway client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	seen := make(chan string, 4)
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.TLS.PeerCertificates[0].Subject.CommonName
	}))
	backend.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	backend.StartTLS()
	defer backend.Close()

	certPEM, keyPEM := pemOf(t, client, clientKey)
	roundTrip := func(tr *Transport) error {
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		defer cancel()
		if err := tr.Provision(ctx); err != nil {
			return err
		}
		defer func() { _ = tr.Cleanup() }()
		req, _ := http.NewRequest(http.MethodGet, backend.URL, nil)
		res, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		return res.Body.Close()
	}
	newTransport := func(cc *ClientCertificate) *Transport {
		return &Transport{
			HTTPTransport:     reverseproxy.HTTPTransport{TLS: &reverseproxy.TLSConfig{InsecureSkipVerify: true}},
			ClientCertificate: cc,
		}
	}
	if err := roundTrip(newTransport(&ClientCertificate{Certificate: certPEM, Key: keyPEM})); err != nil {
		t.Fatalf("with the client certificate: %v", err)
	}
	if got := <-seen; got != "gateway client" {
		t.Fatalf("backend saw client %q", got)
	}
	if err := roundTrip(newTransport(nil)); err == nil {
		t.Fatal("without a client certificate the backend accepted the connection")
	}
	if err := roundTrip(newTransport(&ClientCertificate{Certificate: certPEM, Key: "not a key"})); err == nil ||
		!strings.Contains(err.Error(), "client_certificate") {
		t.Fatalf("a broken key: got %v, want a client_certificate error", err)
	}
	noTLS := &Transport{ClientCertificate: &ClientCertificate{Certificate: certPEM, Key: keyPEM}}
	if err := roundTrip(noTLS); err == nil || !strings.Contains(err.Error(), "need tls") {
		t.Fatalf("without tls: got %v", err)
	}
}
