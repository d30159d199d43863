// Package santls is the reverse_proxy transport `kengine_http`: Caddy's `http` transport plus
// Gateway API BackendTLSPolicy `subjectAltNames` and a client certificate given inline.
//
// Stock Caddy verifies a backend certificate against the TLS server name only; with
// subject_alt_names set, this transport verifies the chain against the configured trust (the
// `tls.ca` pool, or the system's) and requires the certificate to carry at least one of the
// listed names, and no longer the server name, which stays the SNI (the spec's rule when
// subjectAltNames is set).
//
// Stock Caddy takes a client certificate for backends from files only; with
// client_certificate set, this transport presents the PEM certificate (chain) and key given in
// the config (Gateway spec.tls.backend.clientCertificateRef) when a backend asks for one.
//
// With egress_guard set (package internal/egress), every connection the transport
// opens (requests, h2c, TLS with a placeholder server name, PROXY protocol, active health
// checks) goes through the guard: the upstream's host is resolved once, its addresses checked,
// and Caddy's dialer is handed a checked literal address. A refused destination is a dial error
// (502 once no other upstream answers). Forward proxies are off under the guard (the
// environment's HTTP_PROXY included): a proxy would dial the destination unchecked; for the
// same reason the guard refuses to be combined with network_proxy, forward_proxy_url, resolver
// and HTTP/3 (versions ["3"], which dials over QUIC outside the transport's dialer).
//
// Config (JSON): every field of the `http` transport, and
//
//	"subject_alt_names": {"dns": ["abc.example.com"], "uri": ["spiffe://abc.example.com/id"]},
//	"client_certificate": {"certificate": "-----BEGIN CERTIFICATE-----...", "key": "-----BEGIN ..."},
//	"egress_guard": {"deny": ["10.96.0.0/12"]}
package santls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"

	"kengine.io/gateway/proxy/internal/egress"
)

func init() {
	caddy.RegisterModule(Transport{})
}

// SubjectAltNames are the names a backend certificate must carry one of.
type SubjectAltNames struct {
	DNS []string `json:"dns,omitempty"`
	URI []string `json:"uri,omitempty"`
}

// ClientCertificate is a PEM certificate (chain, leaf first) and its PEM private key.
type ClientCertificate struct {
	Certificate string `json:"certificate,omitempty"`
	Key         string `json:"key,omitempty"`
}

// Transport is Caddy's HTTP transport with subjectAltNames verification and an inline client
// certificate.
type Transport struct {
	reverseproxy.HTTPTransport
	SubjectAltNames   *SubjectAltNames   `json:"subject_alt_names,omitempty"`
	ClientCertificate *ClientCertificate `json:"client_certificate,omitempty"`
	// EgressGuard, when present, checks every destination at dial time (see the package doc).
	EgressGuard *egress.Config `json:"egress_guard,omitempty"`

	guard *egress.Guard
}

// CaddyModule returns the module's information.
func (Transport) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.reverse_proxy.transport.kengine_http",
		New: func() caddy.Module { return new(Transport) },
	}
}

// Provision sets up the `http` transport, then replaces its server-name check by the SAN check,
// adds the client certificate and puts the egress guard in front of its dialer.
func (t *Transport) Provision(ctx caddy.Context) error {
	if t.EgressGuard != nil {
		if err := t.guardable(); err != nil {
			return err
		}
	}
	if err := t.provisionTLS(ctx); err != nil {
		return err
	}
	if t.EgressGuard != nil {
		return t.guardDials(ctx)
	}
	return nil
}

func (t *Transport) provisionTLS(ctx caddy.Context) error {
	sans := t.SubjectAltNames
	withSANs := sans != nil && len(sans.DNS)+len(sans.URI) > 0
	var cert *tls.Certificate
	if t.ClientCertificate != nil {
		c, err := tls.X509KeyPair([]byte(t.ClientCertificate.Certificate), []byte(t.ClientCertificate.Key))
		if err != nil {
			return fmt.Errorf("client_certificate: %v", err)
		}
		cert = &c
	}
	if !withSANs && cert == nil {
		return t.HTTPTransport.Provision(ctx)
	}
	if t.TLS == nil {
		return errors.New("subject_alt_names and client_certificate need tls")
	}
	if withSANs && t.TLS.InsecureSkipVerify {
		return errors.New("subject_alt_names cannot be combined with insecure_skip_verify")
	}
	if cert != nil && (t.TLS.ClientCertificateFile != "" || t.TLS.ClientCertificateAutomate != "") {
		return errors.New("client_certificate cannot be combined with tls client_certificate_file or client_certificate_automate")
	}
	if err := t.HTTPTransport.Provision(ctx); err != nil {
		return err
	}
	cfg := t.Transport.TLSClientConfig
	if cfg == nil {
		return errors.New("kengine_http: the http transport has no TLS client config")
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	if withSANs {
		// The standard verification checks the server name: skip it and verify here instead.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = Verifier(cfg.RootCAs, *sans)
	}
	return nil
}

// guardable refuses the settings under which a connection would leave the guard's hands.
func (t *Transport) guardable() error {
	switch {
	case len(t.NetworkProxyRaw) > 0 || t.ForwardProxyURL != "":
		return errors.New("egress_guard cannot be combined with network_proxy or forward_proxy_url (the proxy would dial unchecked)")
	case t.Resolver != nil:
		return errors.New("egress_guard cannot be combined with resolver (the guard resolves)")
	case slices.Contains(t.Versions, "3"):
		return errors.New("egress_guard cannot guard HTTP/3 (versions: 3)")
	}
	return nil
}

// dialInfoKey is the context key under which reverse_proxy hands its transport the upstream to
// dial (reverseproxy.GetDialInfo reads it; Caddy's dialer prefers it to the address argument).
const dialInfoKey caddy.CtxKey = "reverse_proxy.dial_info"

// guardDials builds the guard and wraps the provisioned transport's dial functions with it.
func (t *Transport) guardDials(ctx caddy.Context) error {
	g, err := egress.New(*t.EgressGuard, ctx.Logger())
	if err != nil {
		return err
	}
	t.guard = g
	rt := t.Transport
	if rt == nil {
		return errors.New("kengine_http: the http transport has no HTTP transport")
	}
	rt.Proxy = nil
	rt.DialContext = guarded(g, rt.DialContext)
	if rt.DialTLSContext != nil {
		rt.DialTLSContext = guarded(g, rt.DialTLSContext)
	}
	return nil
}

// guarded checks the upstream's address with g and calls dial with each allowed literal
// address in turn, in place of the upstream's own in both the argument and the dial info.
func guarded(g *egress.Guard, dial egress.DialFunc) egress.DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		info, hasInfo := reverseproxy.GetDialInfo(ctx)
		if hasInfo {
			network, address = info.Network, info.Address
		}
		literal := func(ctx context.Context, network, addr string) (net.Conn, error) {
			if hasInfo {
				host, port, _ := net.SplitHostPort(addr)
				ctx = context.WithValue(ctx, dialInfoKey, reverseproxy.DialInfo{
					Upstream: info.Upstream, Network: network, Address: addr, Host: host, Port: port,
				})
			}
			return dial(ctx, network, addr)
		}
		conn, err := g.Wrap(literal)(ctx, network, address)
		if err != nil {
			var dialErr reverseproxy.DialError
			if !errors.As(err, &dialErr) {
				err = reverseproxy.NewDialError(err)
			}
			return nil, err
		}
		return conn, nil
	}
}

// Verifier checks a backend's certificate chain against roots (nil: the system's) and that
// its leaf carries one of sans.
func Verifier(roots *x509.CertPool, sans SubjectAltNames) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("backend sent no certificate")
		}
		leaf := cs.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter}); err != nil {
			return err
		}
		for _, name := range sans.DNS {
			if leaf.VerifyHostname(name) == nil {
				return nil
			}
			for _, have := range leaf.DNSNames {
				if strings.EqualFold(have, name) {
					return nil
				}
			}
		}
		for _, want := range sans.URI {
			for _, have := range leaf.URIs {
				if have.String() == want {
					return nil
				}
			}
		}
		return fmt.Errorf("backend certificate has none of the subjectAltNames %v %v (it has DNS %v, URI %v)",
			sans.DNS, sans.URI, leaf.DNSNames, leaf.URIs)
	}
}

var (
	_ caddy.Provisioner         = (*Transport)(nil)
	_ caddy.CleanerUpper        = (*Transport)(nil)
	_ reverseproxy.TLSTransport = (*Transport)(nil)
)
