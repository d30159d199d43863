// Command image writes the Bundled proxy's OCI image layout (and, with -tar, a tarball) from
// the caddy binary hack/build-peers.sh builds. The version and the image reference come from
// package.json ("version", "kengine.proxyImage"), the same source as the controller's default
// proxy image (capabilities/provision/settings.ts). Usage:
//
//	image -binary BIN -package-json package.json -out DIR [-tar FILE]
//
// Prints the image reference and its digest.
package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// RefAnnotation names the image in the layout's index (what `skopeo copy oci:DIR:REF` and
// `ctr images import` read).
const RefAnnotation = "org.opencontainers.image.ref.name"

func main() {
	binary := flag.String("binary", "", "the Bundled caddy binary")
	pkgJSON := flag.String("package-json", "package.json", "the project's package.json (version, kengine.proxyImage)")
	out := flag.String("out", "", "OCI image layout directory to write (replaced)")
	tarPath := flag.String("tar", "", "also write a tarball (docker load / crane push)")
	flag.Parse()
	if *binary == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: image -binary BIN -package-json FILE -out DIR [-tar FILE]")
		os.Exit(2)
	}
	if err := run(*binary, *pkgJSON, *out, *tarPath); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binaryPath, pkgJSON, out, tarPath string) error {
	var pkg struct {
		Version string `json:"version"`
		Kengine struct {
			ProxyImage string `json:"proxyImage"`
		} `json:"kengine"`
	}
	raw, err := os.ReadFile(pkgJSON)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return fmt.Errorf("%s: %w", pkgJSON, err)
	}
	if pkg.Version == "" || pkg.Kengine.ProxyImage == "" {
		return fmt.Errorf("%s needs \"version\" and \"kengine.proxyImage\"", pkgJSON)
	}
	ref := pkg.Kengine.ProxyImage + ":" + pkg.Version
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	bin, err := os.ReadFile(binaryPath)
	if err != nil {
		return err
	}
	in, err := inspect(binaryPath, bin)
	if err != nil {
		return err
	}
	in.Version = pkg.Version
	img, err := Build(in)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img,
		layout.WithAnnotations(map[string]string{RefAnnotation: tag.String()}),
		layout.WithPlatform(v1.Platform{OS: in.OS, Architecture: in.Arch})); err != nil {
		return err
	}
	if tarPath != "" {
		if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
			return err
		}
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", tag.String(), digest)
	return nil
}

var moduleID = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)

// inspect reads what the labels say from the binary: Go build info and `caddy list-modules`.
func inspect(path string, bin []byte) (Input, error) {
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		return Input{}, fmt.Errorf("%s: no Go build info: %w", path, err)
	}
	in := Input{Binary: bin}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			in.OS = s.Value
		case "GOARCH":
			in.Arch = s.Value
		case "CGO_ENABLED":
			if s.Value != "0" {
				return Input{}, fmt.Errorf("%s is not static (CGO_ENABLED=%s): the image has no libc", path, s.Value)
			}
		}
	}
	for _, d := range bi.Deps {
		v := d.Version
		if d.Replace != nil {
			v = d.Replace.Version
		}
		switch d.Path {
		case "github.com/caddyserver/caddy/v2":
			in.CaddyVersion = v
			in.GoModules = append(in.GoModules, d.Path+"@"+v)
		case "github.com/mholt/caddy-l4":
			in.GoModules = append(in.GoModules, d.Path+"@"+v)
		}
	}
	in.GoModules = append(in.GoModules, bi.Main.Path)
	if in.CaddyVersion == "" {
		return Input{}, fmt.Errorf("%s does not link github.com/caddyserver/caddy/v2", path)
	}
	listed, err := exec.Command(path, "list-modules").Output()
	if err != nil {
		return Input{}, fmt.Errorf("%s list-modules: %w", path, err)
	}
	for _, l := range strings.Split(string(listed), "\n") {
		if l = strings.TrimSpace(l); moduleID.MatchString(l) {
			in.Modules = append(in.Modules, l)
		}
	}
	if len(in.Modules) == 0 {
		return Input{}, fmt.Errorf("%s list-modules listed no module", path)
	}
	return in, nil
}
