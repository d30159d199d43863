//go:build tools

// Package pebble pins Let's Encrypt's ACME test server (the local platform's certificate
// authority for automatic HTTPS) in a Go module of its own, so the other peers' cache keys
// (which cover hack/go.mod) do not change with it.
package pebble

import _ "github.com/letsencrypt/pebble/v2/cmd/pebble"
