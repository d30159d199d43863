//go:build tools

// Package helm pins Helm's command line (helm.sh/helm/v3/cmd/helm) in a Go module of its own:
// the Helm chart tests (tests/e2e/helm.test.ts) render and install the chart `npm run build`
// writes with a real helm, built from this module. A module of its own so that Helm's
// Kubernetes client modules never mix with the ones the other peers are built from.
package helm

import _ "helm.sh/helm/v3/cmd/helm"
