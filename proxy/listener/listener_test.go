package listener

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp"
	_ "github.com/caddyserver/caddy/v2/modules/caddyhttp/standard"
	_ "github.com/caddyserver/caddy/v2/modules/caddytls"
	_ "github.com/caddyserver/caddy/v2/modules/logging"
	_ "github.com/mholt/caddy-l4/layer4"
	_ "github.com/mholt/caddy-l4/modules/l4echo"

	"kengine.io/gateway/proxy/internal/caddytest"
)

func TestMain(m *testing.M) { caddytest.Main(m, "listener") }

// freePort is a loopback port nothing listens on right now.
func freePort(t *testing.T) int { return caddytest.FreePort(t) }

// httpConfig is a Caddy config with one HTTP server on addr answering `body`, the shutdown
// delay the controller sets, and a debug log to logFile.
func httpConfig(addr, body, logFile string) []byte {
	cfg := map[string]any{
		"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{
			"level":  "DEBUG",
			"writer": map[string]any{"output": "file", "filename": logFile},
		}}},
		"apps": map[string]any{"http": map[string]any{
			"shutdown_delay": "5s",
			"servers": map[string]any{"srv": map[string]any{
				"listen":          []string{addr},
				"automatic_https": map[string]any{"disable": true},
				"routes": []any{map[string]any{"handle": []any{map[string]any{
					"handler": "static_response", "status_code": 200, "body": body,
				}}}},
			}},
		}},
	}
	b, _ := json.Marshal(cfg)
	return b
}

// storm runs `clients` goroutines, each sending GETs on new connections to addr until stop
// is closed; it returns how many were sent and every failure.
func storm(addr string, clients int, stop <-chan struct{}) (sent *atomic.Int64, failures func() []string, wait func()) {
	return stormURL("http://"+addr+"/", &http.Transport{DisableKeepAlives: true}, clients, stop)
}

func stormURL(url string, transport *http.Transport, clients int, stop <-chan struct{}) (sent *atomic.Int64, failures func() []string, wait func()) {
	sent = new(atomic.Int64)
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				resp, err := client.Get(url)
				if err == nil {
					body, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					if rerr != nil {
						err = rerr
					} else if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "config-") {
						err = fmt.Errorf("status %d body %q", resp.StatusCode, body)
					}
				}
				if err != nil {
					mu.Lock()
					failed = append(failed, err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	return sent, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), failed...)
	}, wg.Wait
}

func reloads() int {
	if testing.Short() {
		return 40
	}
	return 200
}

// Caddy reloaded many times (two configs taking turns, as route changes do) while clients
// open new connections as fast as they can: not one fails, and no reload waits for the
// shutdown delay (Caddy logs "shutdown scheduled" when it does).
func TestReloadStormLosesNoConnection(t *testing.T) {
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	if err := caddy.Load(httpConfig(HTTPNetwork+"/"+addr, "config-0", logFile), true); err != nil {
		t.Fatal(err)
	}
	defer caddy.Stop()
	stop := make(chan struct{})
	sent, failures, wait := storm(addr, 8, stop)
	n := reloads()
	for i := 1; i <= n; i++ {
		if err := caddy.Load(httpConfig(HTTPNetwork+"/"+addr, fmt.Sprintf("config-%d", i), logFile), true); err != nil {
			close(stop)
			t.Fatalf("reload %d: %v", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wait()
	f := failures()
	t.Logf("%d reloads, %d requests on new connections, %d failed", n, sent.Load(), len(f))
	if len(f) > 0 {
		t.Errorf("%d of %d requests failed, e.g. %v", len(f), sent.Load(), f[:min(len(f), 5)])
	}
	if sent.Load() < int64(n) {
		t.Errorf("only %d requests were sent during %d reloads", sent.Load(), n)
	}
	log, _ := os.ReadFile(logFile)
	if strings.Contains(string(log), "shutdown scheduled") {
		t.Errorf("a reload waited for the shutdown delay (the pool's usage count is wrong)")
	}
	if got := Sockets(); got[addr] != 1 {
		t.Errorf("sockets after the storm: %v, want one view on %s", got, addr)
	}
}

// selfSigned is a PEM certificate and key for localhost.
func selfSigned(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

// HTTPS: the same storm over TLS (new connection and handshake each). The server writes
// during the handshake, so a connection it accepted just before its config stopped cannot be
// handed on; a new view waits for the older views' TLS connections to settle. (Without that
// wait about half the requests of this storm failed.)
func TestTLSReloadStorm(t *testing.T) {
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	certPEM, keyPEM := selfSigned(t)
	config := func(i int) []byte {
		b, _ := json.Marshal(map[string]any{
			"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
			"apps": map[string]any{
				"http": map[string]any{
					"shutdown_delay": "5s",
					"servers": map[string]any{"srv": map[string]any{
						"listen":                  []string{HTTPNetwork + "/" + addr},
						"automatic_https":         map[string]any{"disable": true},
						"protocols":               []string{"h1", "h2"},
						"tls_connection_policies": []any{map[string]any{}},
						"routes": []any{map[string]any{"handle": []any{map[string]any{
							"handler": "static_response", "status_code": 200, "body": fmt.Sprintf("config-%d", i),
						}}}},
					}},
				},
				"tls": map[string]any{"certificates": map[string]any{
					"load_pem": []any{map[string]any{"certificate": certPEM, "key": keyPEM}},
				}},
			},
		})
		return b
	}
	if err := caddy.Load(config(0), true); err != nil {
		t.Fatal(err)
	}
	defer caddy.Stop()
	stop := make(chan struct{})
	sent, failures, wait := stormURL("https://"+addr+"/", &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"},
	}, 8, stop)
	n := reloads() / 4
	// What is tested is that a reload waits for the handshakes and first requests in flight;
	// TLSSettle, the bound on that wait for stalled clients, is raised above this machine's
	// slowest handshake here (with -race and other packages' tests beside it, handshakes of
	// over 500 ms cut about 1 request in 60).
	defer func(old time.Duration) { TLSSettle = old }(TLSSettle)
	TLSSettle = 5 * time.Second
	if os.Getenv("TLS_NO_RELOAD") != "" {
		n = 0
		time.Sleep(2 * time.Second)
	}
	for i := 1; i <= n; i++ {
		if err := caddy.Load(config(i), true); err != nil {
			close(stop)
			t.Fatalf("reload %d: %v", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wait()
	f := failures()
	t.Logf("https: %d reloads, %d requests on new connections, %d failed %v", n, sent.Load(), len(f), f[:min(len(f), 5)])
	// Left open (package doc): a server that has read a request parses it only after the
	// reload's stop began. At most 1 in 100.
	if len(f)*100 > int(sent.Load()) {
		t.Errorf("%d of %d requests failed", len(f), sent.Load())
	}
}

// A socket whose config serves HTTPS is known to before any client has sent a byte: a reload
// in its first moments waits for the handshakes in flight (before, such a reload cut every
// one of them: 8 in a row, in a storm's first 60 ms). A server with no TLS connection policies,
// or one on the app's HTTP port, does not serve HTTPS.
func TestSocketServingTLSIsKnownFromItsConfig(t *testing.T) {
	certPEM, keyPEM := selfSigned(t)
	for _, tc := range []struct {
		name     string
		policies bool
		httpPort bool
		want     bool
	}{
		{"TLS connection policies", true, false, true},
		{"no TLS connection policies", false, false, false},
		{"TLS connection policies on the HTTP port", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := freePort(t)
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			srv := map[string]any{
				"listen":          []string{HTTPNetwork + "/" + addr},
				"automatic_https": map[string]any{"disable": true},
				"protocols":       []string{"h1", "h2"},
			}
			if tc.policies {
				srv["tls_connection_policies"] = []any{map[string]any{}}
			}
			httpApp := map[string]any{"servers": map[string]any{"srv": srv}}
			if tc.httpPort {
				httpApp["http_port"] = port
			}
			cfg, _ := json.Marshal(map[string]any{
				"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
				"apps": map[string]any{
					"http": httpApp,
					"tls": map[string]any{"certificates": map[string]any{
						"load_pem": []any{map[string]any{"certificate": certPEM, "key": keyPEM}},
					}},
				},
			})
			if err := caddy.Load(cfg, true); err != nil {
				t.Fatal(err)
			}
			defer caddy.Stop()
			mu.Lock()
			s := sockets[addr]
			mu.Unlock()
			if s == nil {
				t.Fatalf("no socket on %s", addr)
			}
			if got := s.sawTLS.Load(); got != tc.want {
				t.Fatalf("socket serves TLS: %v, want %v", got, tc.want)
			}
		})
	}
}

// The same storm on Caddy's own "tcp" network, for comparison: logged, not asserted (the
// losses depend on timing).
func TestReloadStormStockNetworkForComparison(t *testing.T) {
	if os.Getenv("KENGINE_LISTENER_COMPARE") == "" {
		t.Skip("set KENGINE_LISTENER_COMPARE=1 to measure stock Caddy's losses")
	}
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logFile := filepath.Join(t.TempDir(), "caddy.log")
	if err := caddy.Load(httpConfig("tcp/"+addr, "config-0", logFile), true); err != nil {
		t.Fatal(err)
	}
	defer caddy.Stop()
	stop := make(chan struct{})
	sent, failures, wait := storm(addr, 8, stop)
	n := reloads()
	for i := 1; i <= n; i++ {
		if err := caddy.Load(httpConfig("tcp/"+addr, fmt.Sprintf("config-%d", i), logFile), true); err != nil {
			close(stop)
			t.Fatalf("reload %d: %v", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wait()
	t.Logf("stock tcp: %d reloads, %d requests on new connections, %d failed", n, sent.Load(), len(failures()))
}

// caddy-l4 servers listen through caddy.NetworkAddress too: an echo server reloaded under
// a storm of TCP connections answers every one.
func TestLayer4ReloadStormLosesNoConnection(t *testing.T) {
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	config := func(i int) []byte {
		b, _ := json.Marshal(map[string]any{
			"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
			"apps": map[string]any{"layer4": map[string]any{"servers": map[string]any{
				fmt.Sprintf("echo-%d", i%2): map[string]any{
					"listen": []string{TCPNetwork + "/" + addr},
					"routes": []any{map[string]any{"handle": []any{map[string]any{"handler": "echo"}}}},
				},
			}}},
		})
		return b
	}
	if err := caddy.Load(config(0), true); err != nil {
		t.Fatal(err)
	}
	defer caddy.Stop()
	stop := make(chan struct{})
	var sent atomic.Int64
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				err := func() error {
					conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
					if err != nil {
						return err
					}
					defer conn.Close()
					_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
					msg := fmt.Sprintf("hello %d\n", k)
					if _, err := io.WriteString(conn, msg); err != nil {
						return err
					}
					got, err := bufio.NewReader(conn).ReadString('\n')
					if err != nil {
						return err
					}
					if got != msg {
						return fmt.Errorf("echo %q, want %q", got, msg)
					}
					return nil
				}()
				if err != nil {
					mu.Lock()
					failed = append(failed, err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	n := reloads()
	for i := 1; i <= n; i++ {
		if err := caddy.Load(config(i), true); err != nil {
			close(stop)
			t.Fatalf("reload %d: %v", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("layer4: %d reloads, %d connections, %d failed", n, sent.Load(), len(failed))
	if len(failed) > 0 {
		t.Errorf("%d of %d connections failed, e.g. %v", len(failed), sent.Load(), failed[:min(len(failed), 5)])
	}
}

// Views share one socket; the socket closes only after the last view has been closed for
// Linger, and a view opened within the linger keeps it.
func TestSocketLifetime(t *testing.T) {
	old := Linger
	Linger = 200 * time.Millisecond
	defer func() { Linger = old }()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	na, err := caddy.ParseNetworkAddress(HTTPNetwork + "/" + addr)
	if err != nil {
		t.Fatal(err)
	}
	open := func() net.Listener {
		t.Helper()
		ln, err := na.Listen(context.Background(), 0, net.ListenConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return ln.(net.Listener)
	}
	a := open()
	b := open()
	if got := caddy.ListenerUsage(HTTPNetwork, addr); got != 2 {
		t.Errorf("ListenerUsage with two views = %d, want 2", got)
	}
	if a.Addr().String() != addr || b.Addr().String() != addr {
		t.Errorf("Addr: %v, %v, want %s", a.Addr(), b.Addr(), addr)
	}
	// A connection is served by whichever view accepts.
	go func() {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_, _ = io.WriteString(c, "x")
			c.Close()
		}
	}()
	c, err := b.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err == nil {
		t.Errorf("second Close of a view succeeded")
	}
	if _, err := a.Accept(); err == nil {
		t.Errorf("Accept on a closed view succeeded")
	}
	// Last view closed, a new one within the linger: same socket (it was never unbound).
	raw := sockets[addr].ln
	b.Close()
	c2 := open()
	if sockets[addr].ln != raw {
		t.Errorf("a view opened within the linger got a new socket")
	}
	c2.Close()
	deadline := time.Now().Add(10 * time.Second)
	for Sockets()[addr] > 0 || hasSocket(addr) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if hasSocket(addr) {
		t.Fatalf("socket %s still open after the linger: %v", addr, Sockets())
	}
	if got := caddy.ListenerUsage(HTTPNetwork, addr); got != 0 {
		t.Errorf("ListenerUsage after all views closed = %d, want 0", got)
	}
	// The port is free again.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("port still bound after the socket closed: %v", err)
	}
	ln.Close()
}

func hasSocket(addr string) bool {
	_, ok := Sockets()[addr]
	return ok
}

// A view closed while a connection was on its way to it hands the connection to another
// view: many views opened and closed while connections arrive, none is lost.
func TestClosingViewsLoseNoConnection(t *testing.T) {
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	na, _ := caddy.ParseNetworkAddress(TCPNetwork + "/" + addr)
	serve := func(ln net.Listener, served *atomic.Int64) {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			served.Add(1)
			go func() {
				_, _ = io.WriteString(c, "ok\n")
				c.Close()
			}()
		}
	}
	var served atomic.Int64
	first, err := na.Listen(context.Background(), 0, net.ListenConfig{})
	if err != nil {
		t.Fatal(err)
	}
	current := first.(net.Listener)
	go serve(current, &served)
	const conns = 2000
	var wg sync.WaitGroup
	var failed atomic.Int64
	sem := make(chan struct{}, 16)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			if err != nil {
				failed.Add(1)
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || line != "ok\n" {
				failed.Add(1)
			}
		}()
		if i%10 == 0 {
			next, err := na.Listen(context.Background(), 0, net.ListenConfig{})
			if err != nil {
				t.Fatal(err)
			}
			go serve(next.(net.Listener), &served)
			current.Close()
			current = next.(net.Listener)
		}
	}
	wg.Wait()
	current.Close()
	if failed.Load() != 0 || served.Load() != conns {
		t.Errorf("%d of %d connections failed; %d served", failed.Load(), conns, served.Load())
	}
}

// A TLS connection is at risk (a reload waits for it) from its accept until its server has
// begun to answer the first request (read again and written to the client, or left the
// connection alone for settleGrace after reading it), whatever the TLS version; the answer
// does not undo that.
func TestTLSAtRiskUntilTheFirstRequestIsAnswered(t *testing.T) {
	certPEM, keyPEM := selfSigned(t)
	cert, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		for _, answer := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s answered %v", tls.VersionName(version), answer), func(t *testing.T) {
				addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
				ln, err := acquire(context.Background(), HTTPNetwork, addr, net.ListenConfig{}, true, false)
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				client, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer client.Close()
				raw, err := ln.Accept()
				if err != nil {
					t.Fatal(err)
				}
				c := raw.(*conn)
				defer c.Close()
				if c.tlsAtRisk() {
					t.Fatal("a connection that sent nothing on a socket that has not seen TLS is at risk")
				}
				server := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: version})
				tc := tls.Client(client, &tls.Config{InsecureSkipVerify: true, MaxVersion: version})
				handshake := make(chan error, 1)
				go func() { handshake <- tc.Handshake() }()
				if err := server.Handshake(); err != nil {
					t.Fatal(err)
				}
				if err := <-handshake; err != nil {
					t.Fatal(err)
				}
				if got := server.ConnectionState().Version; got != version {
					t.Fatalf("negotiated %s", tls.VersionName(got))
				}
				if !c.tlsAtRisk() {
					t.Fatal("after the handshake, before any request: not at risk")
				}
				go func() { _, _ = tc.Write([]byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")) }()
				buf := make([]byte, 64)
				n, err := server.Read(buf)
				if err != nil || !strings.HasPrefix(string(buf[:n]), "GET /") {
					t.Fatalf("server read %q, %v", buf[:n], err)
				}
				if answer {
					go func() { _, _ = io.Copy(io.Discard, tc) }()
					// A write before the server reads again (a session ticket) is not the answer.
					if _, err := server.Write([]byte("HTTP/1.1 200 OK\r\n")); err != nil {
						t.Fatal(err)
					}
					if !c.tlsAtRisk() {
						t.Fatal("a write right after the request was read, before another read began: not at risk")
					}
					// net/http's background read, then the answer.
					go func() { _, _ = server.Read(make([]byte, 1)) }()
					for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
						c.mu.Lock()
						again := c.readAgain
						c.mu.Unlock()
						if again {
							break
						}
						if time.Now().After(deadline) {
							t.Fatal("the server's second read was not seen")
						}
					}
					if _, err := server.Write([]byte("Content-Length: 0\r\n\r\n")); err != nil {
						t.Fatal(err)
					}
				} else {
					time.Sleep(settleGrace)
					if c.tlsAtRisk() {
						t.Fatal("settleGrace after the request was read: still at risk")
					}
					// The server is still at work on it (it sets a deadline): at risk again,
					// until it has been quiet for settleGrace.
					if err := server.SetReadDeadline(time.Time{}); err != nil {
						t.Fatal(err)
					}
					if !c.tlsAtRisk() {
						t.Fatal("the server set a deadline after the read: not at risk")
					}
					time.Sleep(settleGrace)
				}
				if c.tlsAtRisk() {
					t.Fatal("the server began to answer: still at risk")
				}
				if answer {
					if _, err := server.Write([]byte("more")); err != nil {
						t.Fatal(err)
					}
					if c.tlsAtRisk() {
						t.Fatal("after more of the answer: at risk again")
					}
				}
				if !c.view.s.sawTLS.Load() {
					t.Fatal("the socket did not note that it serves TLS")
				}
			})
		}
	}
}

// The record counter follows records split across reads and stops at bytes that are not TLS.
func TestRecordsCountsApplicationDataAcrossReads(t *testing.T) {
	stream := []byte{0x16, 3, 1, 0, 2, 'h', 'i', 0x14, 3, 3, 0, 1, 1, 0x17, 3, 3, 0, 3, 'a', 'b', 'c', 0x17, 3, 3, 0, 0}
	for split := 0; split <= len(stream); split++ {
		var r records
		for _, b := range stream[:split] {
			r.see([]byte{b})
		}
		r.see(stream[split:])
		if r.appData != 2 || !r.done {
			t.Fatalf("split at %d: %d application-data records, done %v", split, r.appData, r.done)
		}
	}
	var r records
	r.see([]byte("GET / HTTP/1.1\r\n"))
	r.see([]byte{0x17, 3, 3, 0, 0})
	if r.appData != 0 || !r.done {
		t.Fatalf("plain HTTP then a record: %d counted, done %v", r.appData, r.done)
	}
}
