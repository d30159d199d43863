//go:build tools

// Package coredns pins the real node's cluster DNS server.
package coredns

import (
	_ "github.com/coredns/coredns"
)
