#!/usr/bin/env bash
# Builds the real test peers from the Go modules pinned in hack/go.mod and caches them under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kengine-gateway/<hash>/
# so a fresh clone rebuilds nothing. Prints the cache directory on stdout (last line).
# Each peer has a key: the Go version, go.mod, go.sum and the project's own sources it is built
# from (e.g. proxy/, the data plane's own Go module, for the proxy). A binary is built once per key into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/kengine-gateway/objects/<peer>-<key>
# and hard-linked into the cache directory, whose <hash> covers every peer's key: a change to the
# proxy's sources rebuilds the proxy only, and worktrees with different sources never share a
# binary they disagree on.
# Usage: hack/build-peers.sh [peer ...]   (default: all peers)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

command -v go >/dev/null || { echo "build-peers: Go is not installed (needed to build the test peers)" >&2; exit 1; }


# peer name -> Go package (and the module it comes from, for error messages)
declare -A pkg=(
  [etcd]=./peers/etcd
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
  [caddy]=./cmd/caddy
  [caddy-2.8]=.
  [echo-basic]=sigs.k8s.io/gateway-api/conformance/echo-basic
)
# Where `go build` runs: a peer with a go.mod of its own is built inside its folder.
declare -A dir=([caddy-2.8]=peers/caddy-2.8 [caddy]=../proxy)
# The project's own sources each peer is built from (besides hack's go.mod and go.sum); the
# proxy's (../proxy: its own Go module) leave out its image builder (../proxy/image).
declare -A sources=(
  [etcd]=peers/etcd
  [caddy]=../proxy
  [caddy-2.8]=peers/caddy-2.8
)
declare -A module=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kube-apiserver]=k8s.io/kubernetes
  [kube-controller-manager]=k8s.io/kubernetes
  [kubectl]=k8s.io/kubernetes
  [caddy]="github.com/caddyserver/caddy/v2 + github.com/mholt/caddy-l4"
  [caddy-2.8]="github.com/caddyserver/caddy/v2@v2.8.4"
  [echo-basic]=sigs.k8s.io/gateway-api/conformance
)
order=(etcd kube-apiserver kube-controller-manager kubectl caddy caddy-2.8 echo-basic)
want=("$@")
[ ${#want[@]} -eq 0 ] && want=("${order[@]}")

common=$( { go version; cat go.mod go.sum; } | sha256sum | cut -c1-16)
key_of() { # the peer's key: common inputs + its own sources (*.go, go.mod, go.sum), sorted by path
  local p=$1
  # shellcheck disable=SC2086
  { echo "$common"; [ -z "${sources[$p]:-}" ] || find ${sources[$p]} -path ../proxy/image -prune -o -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) ! -name '*_test.go' -print | LC_ALL=C sort | while read -r f; do echo "$f"; cat "$f"; done; } | sha256sum | cut -c1-16
}
declare -A key=()
for p in "${order[@]}"; do key[$p]=$(key_of "$p"); done
hash=$(for p in "${order[@]}"; do echo "$p ${key[$p]}"; done | sha256sum | cut -c1-16)
root="${XDG_CACHE_HOME:-$HOME/.cache}/kengine-gateway"
cache="$root/$hash"
bin="$cache/bin"
objects="$root/objects"
mkdir -p "$bin" "$cache/crds" "$objects"

export CGO_ENABLED=0
for p in "${want[@]}"; do
  [ -n "${pkg[$p]:-}" ] || { echo "build-peers: unknown peer '$p' (known: ${order[*]})" >&2; exit 2; }
  if [ -x "$bin/$p" ]; then continue; fi
  obj="$objects/$p-${key[$p]}"
  if [ ! -x "$obj" ]; then
    echo "build-peers: building $p from ${module[$p]} ..." >&2
    start=$(date +%s)
    log="$objects/build-$p-${key[$p]}.log"
    if ! (cd "${dir[$p]:-.}" && go build -trimpath -ldflags='-s -w' -o "$obj.tmp.$$" "${pkg[$p]}") >"$log" 2>&1; then
      echo "build-peers: FAILED to build $p from module ${module[$p]} (package ${pkg[$p]}):" >&2
      tail -n 30 "$log" >&2
      rm -f "$obj.tmp.$$"
      exit 1
    fi
    mv "$obj.tmp.$$" "$obj"
    echo "build-peers: built $p in $(( $(date +%s) - start ))s" >&2
  fi
  ln -f "$obj" "$bin/$p.tmp.$$" 2>/dev/null || cp "$obj" "$bin/$p.tmp.$$"
  mv -f "$bin/$p.tmp.$$" "$bin/$p"
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
