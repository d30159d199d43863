//go:build tools

// Package hack pins the published Go modules whose commands the local platform builds.
package hack

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/gateway-api/conformance/echo-basic"
)
