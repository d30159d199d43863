//go:build tools

// Package promtool pins Prometheus's rule checker and rule unit-test runner (promtool, the
// test peer that checks deploy/observability/) in a Go module of its own, so the other peers'
// cache keys (which cover hack/go.mod) do not change with it.
package promtool

import _ "github.com/prometheus/prometheus/cmd/promtool"
