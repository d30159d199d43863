// Command caddy-2.8 is stock Caddy v2.8.4, the release Kengine is a renamed fork of: the
// compatibility tests load the configs the controller emits for the Kengine proxy flavour into
// it. It has no layer-4 app: the Go module proxy serves no caddy-l4 revision that builds against
// Caddy 2.8, so the layer-4 part of those configs is checked on the bundled proxy only.
//
// A module of its own (go.mod beside this file), so Caddy 2.8's dependencies never mix with
// the ones the other peers are built from.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

func main() {
	caddycmd.Main()
}
