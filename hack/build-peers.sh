#!/usr/bin/env bash
# Builds the real test peers from the Go modules pinned in hack/go.mod and caches them under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kengine-gateway/<hash>/
# so a fresh clone rebuilds nothing. Prints the cache directory on stdout (last line).
# The hash covers go.mod, go.sum, the Go version, hack/peers/ and hack/proxy/ (our Caddy modules):
# what the binaries are built from.
# Usage: hack/build-peers.sh [peer ...]   (default: all peers)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

command -v go >/dev/null || { echo "build-peers: Go is not installed (needed to build the test peers)" >&2; exit 1; }

hash=$( { go version; cat go.mod go.sum; find peers proxy -type f -name '*.go' ! -name '*_test.go' | LC_ALL=C sort | xargs cat; } | sha256sum | cut -c1-16)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/kengine-gateway/$hash"
bin="$cache/bin"
mkdir -p "$bin" "$cache/crds"

# peer name -> Go package (and the module it comes from, for error messages)
declare -A pkg=(
  [etcd]=./peers/etcd
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
  [caddy]=./peers/caddy
  [echo-basic]=sigs.k8s.io/gateway-api/conformance/echo-basic
)
declare -A module=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kube-apiserver]=k8s.io/kubernetes
  [kube-controller-manager]=k8s.io/kubernetes
  [kubectl]=k8s.io/kubernetes
  [caddy]="github.com/caddyserver/caddy/v2 + github.com/mholt/caddy-l4"
  [echo-basic]=sigs.k8s.io/gateway-api/conformance
)
order=(etcd kube-apiserver kube-controller-manager kubectl caddy echo-basic)
want=("$@")
[ ${#want[@]} -eq 0 ] && want=("${order[@]}")

export CGO_ENABLED=0
for p in "${want[@]}"; do
  [ -n "${pkg[$p]:-}" ] || { echo "build-peers: unknown peer '$p' (known: ${order[*]})" >&2; exit 2; }
  if [ -x "$bin/$p" ]; then continue; fi
  echo "build-peers: building $p from ${module[$p]} ..." >&2
  start=$(date +%s)
  if ! go build -trimpath -ldflags='-s -w' -o "$bin/$p.tmp" "${pkg[$p]}" >"$cache/build-$p.log" 2>&1; then
    echo "build-peers: FAILED to build $p from module ${module[$p]} (package ${pkg[$p]}):" >&2
    tail -n 30 "$cache/build-$p.log" >&2
    rm -f "$bin/$p.tmp"
    exit 1
  fi
  mv "$bin/$p.tmp" "$bin/$p"
  echo "build-peers: built $p in $(( $(date +%s) - start ))s" >&2
done

# Gateway API CRDs (standard and experimental channels) from the pinned module.
if [ ! -f "$cache/crds/.done" ]; then
  gwapi=$(go list -m -f '{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}' sigs.k8s.io/gateway-api)
  dir=$(go mod download -json "sigs.k8s.io/gateway-api@$gwapi" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -d "$dir/config/crd" ] || { echo "build-peers: no CRDs in sigs.k8s.io/gateway-api@$gwapi ($dir)" >&2; exit 1; }
  for ch in standard experimental; do
    mkdir -p "$cache/crds/$ch"
    cp "$dir/config/crd/$ch"/gateway.networking.*.yaml "$cache/crds/$ch/"
    chmod u+w "$cache/crds/$ch"/*.yaml
  done
  touch "$cache/crds/.done"
fi
echo "$cache"
