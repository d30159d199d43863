// Package caddytest holds what the Go tests of our Caddy modules share: running a package's
// tests with Caddy's data in a temporary directory, and free loopback ports.
package caddytest

import (
	"context"
	"net"
	"os"
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
