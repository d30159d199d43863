//go:build tools

package main

// crane pushes the image layout to a registry (docs/operations.md, "The proxy image"):
// `go run github.com/google/go-containerregistry/cmd/crane` from this folder, at the version
// go.mod pins.
import _ "github.com/google/go-containerregistry/cmd/crane"
