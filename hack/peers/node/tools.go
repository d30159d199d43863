//go:build tools

// Package node pins the real node's Kubernetes binaries (kubelet, kube-proxy) to the same
// k8s.io/kubernetes release as the control plane in hack/go.mod.
package node

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
