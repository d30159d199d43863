package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/quick"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

func input(binary []byte, version string) Input {
	return Input{
		Binary: binary, Version: version, CaddyVersion: "v2.11.9",
		GoModules: []string{"github.com/mholt/caddy-l4@v0", "github.com/caddyserver/caddy/v2@v2.11.9"},
		Modules:   []string{"layer4", "http.handlers.kengine_mirror", "admin.api.load"},
		OS:        "linux", Arch: "amd64",
	}
}

func digestOf(t *testing.T, in Input) string {
	t.Helper()
	img, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// The same inputs give the same digest; any change of binary or version changes it.
func TestBuildIsDeterministic(t *testing.T) {
	prop := func(bin []byte, version string, other byte) bool {
		if len(bin) == 0 || version == "" {
			return true
		}
		a, b := digestOf(t, input(bin, version)), digestOf(t, input(append([]byte(nil), bin...), version))
		changed := append(append([]byte(nil), bin...), other)
		return a == b && a != digestOf(t, input(changed, version)) && a != digestOf(t, input(bin, version+"-1"))
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 20}); err != nil {
		t.Fatal(err)
	}
}

func TestConfigRunsWhatThePodsRun(t *testing.T) {
	img, err := Build(input([]byte("bin"), "0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if strings.Join(c.Entrypoint, " ") != "/usr/bin/caddy" || strings.Join(c.Cmd, " ") != "run --config /etc/kengine/bootstrap/caddy.json" {
		t.Fatalf("entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" || cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(Epoch) {
		t.Fatalf("user %q os %q arch %q created %v", c.User, cf.OS, cf.Architecture, cf.Created)
	}
	env := strings.Join(c.Env, " ")
	for _, want := range []string{"PATH=/usr/bin", "XDG_CONFIG_HOME=/var/lib/kengine/config", "XDG_DATA_HOME=/var/lib/kengine/data"} {
		if !strings.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	l := c.Labels
	if l["org.opencontainers.image.version"] != "0.1.0" || l["io.kengine.proxy.caddy-version"] != "v2.11.9" ||
		l["io.kengine.proxy.modules"] != "admin.api.load,http.handlers.kengine_mirror,layer4" ||
		l["io.kengine.proxy.go-modules"] != "github.com/caddyserver/caddy/v2@v2.11.9,github.com/mholt/caddy-l4@v0" {
		t.Fatalf("labels %v", l)
	}
}

func TestLayer(t *testing.T) {
	raw, err := Layer([]byte("the binary"))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	var names []string
	files := map[string]*tar.Header{}
	bodies := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(Epoch) {
			t.Errorf("%s: mtime %v", h.Name, h.ModTime)
		}
		names = append(names, h.Name)
		files[strings.TrimSuffix(h.Name, "/")] = h
		bodies[strings.TrimSuffix(h.Name, "/")], _ = io.ReadAll(tr)
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("entries not sorted: %v", names)
	}
	for _, d := range []string{"etc", "etc/ssl", "usr", "var/lib"} {
		if h := files[d]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != 0 {
			t.Errorf("parent directory %s: %+v", d, h)
		}
	}
	if h := files["usr/bin/caddy"]; h == nil || h.Mode != 0o755 || string(bodies["usr/bin/caddy"]) != "the binary" {
		t.Errorf("usr/bin/caddy: %+v", h)
	}
	for _, d := range []string{"var/lib/kengine", "var/lib/kengine/config", "var/lib/kengine/data"} {
		if h := files[d]; h == nil || h.Uid != UID || h.Gid != GID {
			t.Errorf("%s not owned by %d: %+v", d, UID, h)
		}
	}
	if !strings.Contains(string(bodies["etc/passwd"]), "kengine:x:65532:65532:") || !strings.Contains(string(bodies["etc/group"]), "kengine:x:65532:") {
		t.Errorf("passwd %q group %q", bodies["etc/passwd"], bodies["etc/group"])
	}
	if _, shell := files["bin/sh"]; shell {
		t.Error("the image has a shell")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bodies["etc/ssl/certs/ca-certificates.crt"]) || bytes.Count(bodies["etc/ssl/certs/ca-certificates.crt"], []byte("BEGIN CERTIFICATE")) < 100 {
		t.Error("CA bundle has fewer than 100 certificates")
	}
}

// A Go binary that is not a static Caddy (this test binary) is refused with a reason.
func TestInspectRefusesANonCaddyBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	_, err = inspect(self, bin)
	if err == nil || !(strings.Contains(err.Error(), "does not link github.com/caddyserver/caddy/v2") || strings.Contains(err.Error(), "is not static")) {
		t.Fatalf("got %v", err)
	}
}

// With a Caddy binary (KG_PROXY_BINARY, e.g. from hack/build-peers.sh): writing the layout
// twice gives byte-identical index.json, and the index names the image.
func TestLayoutTwice(t *testing.T) {
	bin := os.Getenv("KG_PROXY_BINARY")
	if bin == "" {
		t.Skip("KG_PROXY_BINARY not set")
	}
	dir := t.TempDir()
	pkg := filepath.Join(dir, "package.json")
	if err := os.WriteFile(pkg, []byte(`{"version":"9.9.9","kengine":{"proxyImage":"example.com/k/kengine"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var index [2][]byte
	for i := range index {
		out := filepath.Join(dir, "layout")
		if err := run(bin, pkg, out, ""); err != nil {
			t.Fatal(err)
		}
		var err error
		if index[i], err = os.ReadFile(filepath.Join(out, "index.json")); err != nil {
			t.Fatal(err)
		}
		if _, err := layout.ImageIndexFromPath(out); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(index[0], index[1]) {
		t.Fatalf("index.json differs:\n%s\n%s", index[0], index[1])
	}
	var idx struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(index[0], &idx); err != nil || len(idx.Manifests) != 1 || idx.Manifests[0].Annotations[RefAnnotation] != "example.com/k/kengine:9.9.9" {
		t.Fatalf("index %s (%v)", index[0], err)
	}
}
