// Package caddytest holds what the Go tests of our Caddy modules share: running a package's
// tests with Caddy's data in a temporary directory, free loopback ports, and Caddy's admin API
// on a unix socket (the product never serves it on TCP).
package caddytest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// Main runs the tests with Caddy's data (autosave, storage: XDG_DATA_HOME, XDG_CONFIG_HOME) in
// a temporary directory, stops Caddy after them and exits with their code. Call it from TestMain.
func Main(m *testing.M, name string) {
	dir, err := os.MkdirTemp("", "kengine-"+name+"-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_DATA_HOME", dir)
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	_ = caddy.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// FreePort is a loopback port nothing listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Module is a Caddy module as its unit tests use it: provisioned, validated, cleaned up.
type Module interface {
	caddy.Provisioner
	caddy.Validator
	caddy.CleanerUpper
}

// Provisioned provisions and validates m in a fresh Caddy context (failing the test if either
// fails) and cleans it up with the test.
func Provisioned[M Module](t testing.TB, m M) M {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := m.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Cleanup() })
	return m
}

// Admin is Caddy's admin API on a unix socket in a temporary directory of the test's.
type Admin struct {
	// Listen is the admin "listen" value: "unix/<dir>/admin.sock".
	Listen string
	// Client sends every request to the socket, whatever the URL's host.
	Client *http.Client
	// URL is the base URL to use with Client ("http://caddy-admin").
	URL string
}

// AdminSocket makes a fresh socket path for Caddy's admin API and a client dialing it. The
// directory is short (os.MkdirTemp, not t.TempDir) to keep the path under the 108 bytes a unix
// socket address may have.
func AdminSocket(t testing.TB) Admin {
	t.Helper()
	dir, err := os.MkdirTemp("", "kg-admin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "admin.sock")
	return Admin{
		Listen: "unix/" + sock,
		Client: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			},
		}},
		URL: "http://caddy-admin",
	}
}

// WithAdmin returns the config with its admin "listen" set to listen (other admin settings
// kept): a config loaded in a test never opens Caddy's default TCP admin address.
func WithAdmin(t testing.TB, config []byte, listen string) []byte {
	t.Helper()
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(config, &cfg); err != nil {
		t.Fatal(err)
	}
	admin := map[string]json.RawMessage{}
	if raw, ok := cfg["admin"]; ok {
		if err := json.Unmarshal(raw, &admin); err != nil {
			t.Fatal(err)
		}
	}
	admin["listen"], _ = json.Marshal(listen)
	cfg["admin"], _ = json.Marshal(admin)
	out, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
