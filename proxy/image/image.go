// Package main builds the OCI image of the Bundled proxy (Caddy + caddy-l4 + the modules in
// proxy/) from the static binary hack/build-peers.sh builds, with no Docker and no network:
// one layer, fixed timestamps, sorted entries, so the same binary and version always give the
// same image digest.
//
// This file is the pure part (inputs → image); main.go reads the binary and writes the layout.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The user the proxy runs as (and owns its writable directories); the managed pods' security
// context uses the same numbers.
const (
	UID  = 65532
	GID  = 65532
	User = "kengine"
)

// Paths inside the image. DataDir, BootstrapConfig: capabilities/proxies/pod.ts (DATA_DIR,
// BOOTSTRAP_DIR/BOOTSTRAP_FILE), checked by capabilities/proxies/image.test.ts.
const (
	BinaryPath      = "/usr/bin/caddy"
	DataDir         = "/var/lib/kengine"
	BootstrapConfig = "/etc/kengine/bootstrap/caddy.json"
	CACertificates  = "/etc/ssl/certs/ca-certificates.crt"
)

// Epoch is every timestamp in the image (layer entries, config, history): the image depends on
// its inputs only.
var Epoch = time.Unix(0, 0).UTC()

// Input is everything the image is made of.
type Input struct {
	Binary       []byte
	Version      string   // the project's version (package.json)
	CaddyVersion string   // github.com/caddyserver/caddy/v2 in the binary's build info
	GoModules    []string // notable modules linked in, "path@version"
	Modules      []string // Caddy module IDs (caddy list-modules)
	OS, Arch     string
}

// Labels stamped on the image config.
func Labels(in Input) map[string]string {
	mods := append([]string(nil), in.Modules...)
	sort.Strings(mods)
	gomods := append([]string(nil), in.GoModules...)
	sort.Strings(gomods)
	return map[string]string{
		"org.opencontainers.image.title":       "kengine",
		"org.opencontainers.image.description": "Kengine Gateway's Bundled proxy: Caddy, caddy-l4 and the kengine modules",
		"org.opencontainers.image.version":     in.Version,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"io.kengine.proxy.flavor":              "Bundled",
		"io.kengine.proxy.caddy-version":       in.CaddyVersion,
		"io.kengine.proxy.go-modules":          strings.Join(gomods, ","),
		"io.kengine.proxy.modules":             strings.Join(mods, ","),
	}
}

// Build assembles the image.
func Build(in Input) (v1.Image, error) {
	if len(in.Binary) == 0 {
		return nil, fmt.Errorf("no proxy binary")
	}
	if in.Version == "" || in.CaddyVersion == "" {
		return nil, fmt.Errorf("version and Caddy version are required")
	}
	layerTar, err := Layer(in.Binary)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: "proxy/image: the Bundled caddy binary, CA certificates, user 65532"},
	})
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = in.OS, in.Arch
	cf.Created = v1.Time{Time: Epoch}
	cf.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"run", "--config", BootstrapConfig},
		Env: []string{
			"PATH=/usr/bin",
			"XDG_CONFIG_HOME=" + DataDir + "/config",
			"XDG_DATA_HOME=" + DataDir + "/data",
		},
		User:       fmt.Sprintf("%d:%d", UID, GID),
		WorkingDir: DataDir,
		Labels:     Labels(in),
	}
	return mutate.ConfigFile(img, cf)
}

type entry struct {
	name string
	mode int64
	uid  int
	body []byte
	dir  bool
}

// Layer is the single layer's tar: entries sorted by name, every timestamp Epoch.
func Layer(binary []byte) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", User, UID, GID, User, DataDir)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", User, GID)
	files := []entry{
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		// Go's resolver reads it: files first (/etc/hosts the pod gets), then DNS.
		{name: "etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{name: strings.TrimPrefix(CACertificates, "/"), mode: 0o644, body: CABundle()},
		{name: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, body: binary},
		{name: "tmp", mode: 0o1777, dir: true},
		// Writable by the proxy's user even without the emptyDir the managed pods mount here.
		{name: strings.TrimPrefix(DataDir, "/"), mode: 0o755, uid: UID, dir: true},
		{name: strings.TrimPrefix(DataDir, "/") + "/config", mode: 0o755, uid: UID, dir: true},
		{name: strings.TrimPrefix(DataDir, "/") + "/data", mode: 0o755, uid: UID, dir: true},
	}
	// Parent directories, root-owned.
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.name] = true
	}
	for _, f := range append([]entry(nil), files...) {
		for d := path.Dir(f.name); d != "."; d = path.Dir(d) {
			if !seen[d] {
				seen[d] = true
				files = append(files, entry{name: d, mode: 0o755, dir: true})
			}
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: Epoch, Format: tar.FormatPAX,
			Typeflag: tar.TypeReg, Size: int64(len(f.body)),
		}
		if f.dir {
			h.Name, h.Typeflag, h.Size = f.name+"/", tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CABundle is the PEM bundle of the Mozilla NSS roots from golang.org/x/crypto/x509roots/fallback
// (a Go module pinned in go.sum, so the bundle is the same on every machine), in the module's
// order. Roots with constraints a PEM file cannot carry (NSS distrust-after dates) are left out.
func CABundle() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if c, err := x509.ParseCertificate(r.Certificate); err == nil {
			fmt.Fprintf(&b, "# %s\n", c.Subject.String())
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}
