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
# Usage: hack/build-peers.sh [peer ...]   (default: all peers; "main": what hack/cluster.sh and
#        npm start need; "--crds": only the CRDs; "image": the proxy's OCI image layout;
#        "node": the real node's binaries, see hack/node/README.md)
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
  [proxy-image]=.
  [caddy-2.8]=.
  [echo-basic]=sigs.k8s.io/gateway-api/conformance/echo-basic
  [pebble]=github.com/letsencrypt/pebble/v2/cmd/pebble
  [helm]=helm.sh/helm/v3/cmd/helm
  [loadgen]=./peers/loadgen
  [ingress-conformance]=.
  [ingress-echo]=./images/echoserver
  [promtool]=github.com/prometheus/prometheus/cmd/promtool
)
# Where `go build` runs: a peer with a go.mod of its own is built inside its folder.
declare -A dir=([caddy-2.8]=peers/caddy-2.8 [pebble]=peers/pebble [helm]=peers/helm [caddy]=../proxy [proxy-image]=../proxy/image
  [ingress-conformance]=peers/ingress-conformance [ingress-echo]=peers/ingress-conformance
  [promtool]=peers/promtool)
# Peers that are a test binary (`go test -c`): the upstream Ingress conformance suite is a godog
# runner in a _test.go file.
declare -A testbin=([ingress-conformance]=1)
# The project's own sources each peer is built from (besides hack's go.mod and go.sum).
declare -A sources=(
  [etcd]=peers/etcd
  [caddy]=../proxy
  [proxy-image]=../proxy/image
  [caddy-2.8]=peers/caddy-2.8
  [pebble]=peers/pebble
  [helm]=peers/helm
  [loadgen]=peers/loadgen
  [ingress-conformance]=peers/ingress-conformance
  [ingress-echo]=peers/ingress-conformance
  [promtool]=peers/promtool
)
# Folders inside a peer's sources that are not part of it: the proxy's image builder.
declare -A exclude=([caddy]=../proxy/image)
declare -A module=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kube-apiserver]=k8s.io/kubernetes
  [kube-controller-manager]=k8s.io/kubernetes
  [kubectl]=k8s.io/kubernetes
  [caddy]="proxy/ (github.com/caddyserver/caddy/v2 + github.com/mholt/caddy-l4 + our modules)"
  [proxy-image]="proxy/image (github.com/google/go-containerregistry)"
  [caddy-2.8]="github.com/caddyserver/caddy/v2@v2.8.4"
  [echo-basic]=sigs.k8s.io/gateway-api/conformance
  [pebble]="github.com/letsencrypt/pebble/v2@v2.10.1 (hack/peers/pebble)"
  [helm]="helm.sh/helm/v3 (hack/peers/helm)"
  [loadgen]="hack/peers/loadgen (the request-path benchmark's load generator)"
  [ingress-conformance]="sigs.k8s.io/ingress-controller-conformance (hack/peers/ingress-conformance)"
  [ingress-echo]="sigs.k8s.io/ingress-controller-conformance/images/echoserver (hack/peers/ingress-conformance)"
  [promtool]="github.com/prometheus/prometheus (hack/peers/promtool)"
)
# Build seconds on this project's 2-core reference machine, idle, cold Go cache (the lead's cold
# npm start of 2026-11-24: the batch 324 s, caddy 76 s, less the ~9 % of compile CPU that
# -dwarf=false saves): the progress estimate when this machine has not built the peer yet
# (afterwards: its last build time).
declare -A default_secs=(
  [etcd]=45 [kube-apiserver]=172 [kube-controller-manager]=49 [kubectl]=20 [caddy]=70
  [proxy-image]=5 [image]=5 [caddy-2.8]=120 [echo-basic]=9 [pebble]=10 [helm]=240 [loadgen]=5
  [ingress-conformance]=100 [ingress-echo]=20 [promtool]=240
)
# "image" is not a binary: the Bundled proxy's OCI image layout ($cache/image), written by
# proxy-image from the caddy binary and package.json (version, kengine.proxyImage).
order=(etcd kube-apiserver kube-controller-manager kubectl caddy proxy-image image caddy-2.8 echo-basic pebble helm loadgen ingress-conformance ingress-echo promtool)
# What the local platform (hack/cluster.sh, npm start) needs; tests build the rest on demand.
main_set=(etcd kube-apiserver kube-controller-manager kubectl caddy image echo-basic pebble)
want=()
node_wanted=
for a in "$@"; do
  case "$a" in
  main) want+=("${main_set[@]}") ;;
  --crds) ;; # only the CRDs below
  node) node_wanted=1 ;; # the real node (below), not part of the hash
  *) want+=("$a") ;;
  esac
done
# all peers, the node's too
if [ $# -eq 0 ]; then
  want=("${order[@]}")
  node_wanted=1
fi
# the image is made from these two
for w in "${want[@]}"; do [ "$w" = image ] && want=(caddy proxy-image "${want[@]}"); done

# The flags of every peer's go build (part of every key). -gcflags=all=-dwarf=false: the
# compiler writes no DWARF, which -ldflags=-w drops from the binaries anyway (same code).
goflags=(-trimpath "-ldflags=-s -w" -gcflags=all=-dwarf=false)
common=$( { go version; echo "${goflags[*]}"; cat go.mod go.sum; } | sha256sum | cut -c1-16)
key_of() { # the peer's key: common inputs + its own sources (*.go, go.mod, go.sum), sorted by path
  local p=$1 notest=(! -name '*_test.go')
  [ -z "${testbin[$p]:-}" ] || notest=() # a test binary is built from its _test.go files
  # shellcheck disable=SC2086
  { echo "$common"; [ -z "${sources[$p]:-}" ] || find ${sources[$p]} ${exclude[$p]:+-path ${exclude[$p]} -prune -o} -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) "${notest[@]}" -print | LC_ALL=C sort | while read -r f; do echo "$f"; cat "$f"; done; } | sha256sum | cut -c1-16
}
declare -A key=()
for p in "${order[@]}"; do [ "$p" = image ] || key[$p]=$(key_of "$p"); done
image_meta=$(node -e 'const p=require("../package.json"); if (!p.version || !p.kengine?.proxyImage) process.exit(1); console.log(p.kengine.proxyImage + ":" + p.version)') ||
  { echo "build-peers: package.json needs \"version\" and \"kengine.proxyImage\"" >&2; exit 1; }
key[image]=$(echo "${key[caddy]} ${key[proxy-image]} $image_meta" | sha256sum | cut -c1-16)
# The Gateway API CRDs come from the release pinned in peers/conformance/go.mod (the conformance
# suite's own module: it needs a newer Go and newer Kubernetes modules than this one).
crds_key=$(cat peers/conformance/go.mod peers/conformance/go.sum | sha256sum | cut -c1-16)
hash=$( { for p in "${order[@]}"; do echo "$p ${key[$p]}"; done; echo "crds $crds_key"; } | sha256sum | cut -c1-16)
root="${XDG_CACHE_HOME:-$HOME/.cache}/kengine-gateway"
cache="$root/$hash"
bin="$cache/bin"
objects="$root/objects"
times="$root/build-times" # "<peer> <seconds>" of the last build of each peer on this machine
mkdir -p "$bin" "$cache/crds" "$objects"
touch "$times"
secs_of() { local s; s=$(awk -v p="$1" '$1 == p { s = $2 } END { print s }' "$times"); echo "${s:-${default_secs[$1]}}"; }
built() { # BINARY-OR-DIR: whether peer $1 is already in the cache
  if [ "$1" = image ]; then [ -f "$cache/image/index.json" ]; else [ -x "$bin/$1" ] || [ -x "$objects/$1-${key[$1]}" ]; fi
}

# What is left to build, once each, in order, and how long it should take.
todo=()
declare -A queued=()
left=0
for p in "${order[@]}"; do
  for w in "${want[@]}"; do
    [ "$w" = "$p" ] || continue
    [ -z "${queued[$p]:-}" ] || continue
    queued[$p]=1
    if ! built "$p"; then todo+=("$p"); left=$(( left + $(secs_of "$p") )); fi
  done
done
for w in "${want[@]}"; do
  [ -n "${queued[$w]:-}" ] || { echo "build-peers: unknown peer '$w' (known: ${order[*]}, main, --crds)" >&2; exit 2; }
done
[ ${#todo[@]} -eq 0 ] || echo "build-peers: to build: ${todo[*]} (about $(( (left + 59) / 60 )) min on 2 cores)" >&2

export CGO_ENABLED=0
n=0
# build_peer PEER N [MIN-LEFT]: builds one peer (not the batch) into objects/, records its time.
build_peer() {
  local p=$1 i=$2 left_min=${3:-} est obj log start took
  obj="$objects/$p-${key[$p]}"
  est=$(secs_of "$p")
  echo "build-peers: [$i/${#todo[@]}] building $p from ${module[$p]} (about ${est}s${left_min:+; about $left_min min left}) ..." >&2
  start=$(date +%s)
  log="$objects/build-$p-${key[$p]}.log"
  local gocmd=(go build)
  [ -z "${testbin[$p]:-}" ] || gocmd=(go test -c)
  if ! (cd "${dir[$p]:-.}" && "${gocmd[@]}" "${goflags[@]}" -o "$obj.tmp.$$" "${pkg[$p]}") >"$log" 2>&1; then
    echo "build-peers: FAILED to build $p from module ${module[$p]} (package ${pkg[$p]}):" >&2
    tail -n 30 "$log" >&2
    rm -f "$obj.tmp.$$"
    return 1
  fi
  mv "$obj.tmp.$$" "$obj"
  took=$(( $(date +%s) - start ))
  echo "$p $took" >>"$times"
  echo "build-peers: built $p in ${took}s" >&2
}

# Gateway API CRDs (standard and experimental channels) from the release pinned in
# peers/conformance/go.mod. That module asks for a newer Go than the local one: GOTOOLCHAIN=auto
# lets the go command fetch the toolchain its go.mod names (from the module proxy; about 20 s
# of download the first time, so a cold build fetches it beside the compiles).
fetch_crds() {
  local gwapi src ch
  gwapi=$(cd peers/conformance && GOTOOLCHAIN=auto go list -m -f '{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}' sigs.k8s.io/gateway-api)
  src=$(cd peers/conformance && GOTOOLCHAIN=auto go mod download -json "sigs.k8s.io/gateway-api@$gwapi" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -d "$src/config/crd" ] || { echo "build-peers: no CRDs in sigs.k8s.io/gateway-api@$gwapi ($src)" >&2; return 1; }
  for ch in standard experimental; do
    mkdir -p "$cache/crds/$ch"
    cp "$src/config/crd/$ch"/gateway.networking.*.yaml "$cache/crds/$ch/"
    chmod u+w "$cache/crds/$ch"/*.yaml
  done
  touch "$cache/crds/.done"
}

# A cold build's first phase runs three things at once: the one `go build` of the peers of
# hack/go.mod, caddy (its own module, proxy/) beside it, and the CRDs' download. Both cores
# stay busy through what would idle them one after the other (module downloads, the
# single-threaded tail of each link).
bg_pids=()
bg_what=()
if [ ! -f "$cache/crds/.done" ]; then
  fetch_crds &
  bg_pids+=($!)
  bg_what+=("the Gateway API CRDs")
fi
# The peers of hack/go.mod still to build go into one `go build`: the Go tool then schedules
# their compiles and links together on both cores (warm cache, all five relinked on the 2-core
# machine under load: 25 s in one invocation, 32 s one after the other; same binaries).
batch=()
for p in "${order[@]}"; do
  if [ -n "${queued[$p]:-}" ] && [ "$p" != image ] && [ -z "${dir[$p]:-}" ] && ! built "$p"; then batch+=("$p"); fi
done
beside=() # built concurrently with the batch
if [ ${#batch[@]} -gt 1 ] && [ -n "${queued[caddy]:-}" ] && ! built caddy; then beside=(caddy); fi
if [ ${#batch[@]} -gt 1 ]; then
  est=0
  pkgs=()
  for p in "${batch[@]}"; do est=$(( est + $(secs_of "$p") )); pkgs+=("${pkg[$p]}"); done
  for p in "${beside[@]}"; do
    n=$(( n + 1 ))
    build_peer "$p" "$n" &
    bg_pids+=($!)
    bg_what+=("$p")
  done
  both=$(( est + (${#beside[@]} > 0 ? $(secs_of caddy) : 0) ))
  echo "build-peers: [$(( n + 1 ))-$(( n + ${#batch[@]} ))/${#todo[@]}] building ${batch[*]} from hack/go.mod in one go build${beside[*]:+ (and ${beside[*]} beside it: about ${both}s for both)} (about ${est}s; about $(( (left + 59) / 60 )) min left) ..." >&2
  start=$(date +%s)
  tmp="$objects/batch.tmp.$$"
  log="$objects/build-batch-$$.log"
  rm -rf "$tmp" && mkdir -p "$tmp"
  if ! go build "${goflags[@]}" -o "$tmp/" "${pkgs[@]}" >"$log" 2>&1; then
    echo "build-peers: FAILED to build ${batch[*]} (packages ${pkgs[*]}):" >&2
    tail -n 30 "$log" >&2
    rm -rf "$tmp"
    for pid in "${bg_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    exit 1
  fi
  took=$(( $(date +%s) - start ))
  for p in "${batch[@]}"; do
    mv "$tmp/$(basename "${pkg[$p]}")" "$objects/$p-${key[$p]}"
    # the batch's time, shared out by the estimates, for the next progress estimate
    echo "$p $(( took * $(secs_of "$p") / (est > 0 ? est : 1) ))" >>"$times"
  done
  rm -rf "$tmp" "$log"
  n=$(( n + ${#batch[@]} ))
  left=$(( left > both ? left - both : 0 ))
  echo "build-peers: built ${batch[*]} in ${took}s" >&2
fi
for i in "${!bg_pids[@]}"; do
  wait "${bg_pids[$i]}" || { echo "build-peers: FAILED: ${bg_what[$i]}" >&2; exit 1; }
done

for p in "${order[@]}"; do
  [ -n "${queued[$p]:-}" ] || continue
  if [ "$p" = image ]; then
    if [ ! -f "$cache/image/index.json" ]; then
      n=$(( n + 1 ))
      echo "build-peers: [$n/${#todo[@]}] writing the proxy image $image_meta (OCI layout) ..." >&2
      rm -rf "$cache/image.tmp.$$"
      ref=$("$bin/proxy-image" -binary "$bin/caddy" -package-json ../package.json -out "$cache/image.tmp.$$") ||
        { echo "build-peers: FAILED to write the proxy image" >&2; rm -rf "$cache/image.tmp.$$"; exit 1; }
      rm -rf "$cache/image" && mv "$cache/image.tmp.$$" "$cache/image"
      echo "build-peers: wrote $ref to $cache/image" >&2
    fi
    continue
  fi
  if [ -x "$bin/$p" ]; then continue; fi
  obj="$objects/$p-${key[$p]}"
  if [ ! -x "$obj" ]; then
    n=$(( n + 1 ))
    est=$(secs_of "$p")
    build_peer "$p" "$n" $(( (left + 59) / 60 )) || exit 1
    left=$(( left > est ? left - est : 0 ))
  fi
  ln -f "$obj" "$bin/$p.tmp.$$" 2>/dev/null || cp "$obj" "$bin/$p.tmp.$$"
  mv -f "$bin/$p.tmp.$$" "$bin/$p"
done

# ---------------------------------------------------------------------------- the real node
# The real node (hack/node/README.md): kubelet and kube-proxy from hack/go.mod, the control
# plane's own module, so that the packages they share with it (about 1,700 of their 1,830) come
# compiled from the Go build cache; containerd, its runc shim, ctr, crictl and the CNI plugins
# from peers/containerd; kg-probe (node/kg-probe: the test images' helper) and kube-scheduler
# from hack/go.mod too; CoreDNS from peers/coredns (its main.go links only the plugins the local
# Corefiles use; in hack/go.mod it would raise versions the control plane is built with).
# Each group is one `go build` into objects/node-<group>-<key>/, linked into node-bin/. Kept out of
# the cache <hash>: the control plane's cache does not change when only the node's sources do.
build_node() {
  local g gdir key obj start took b
  declare -A gpkgs=(
    [node]="k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy"
    [containerd]="github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/ctr sigs.k8s.io/cri-tools/cmd/crictl github.com/containernetworking/plugins/plugins/main/bridge github.com/containernetworking/plugins/plugins/ipam/host-local github.com/containernetworking/plugins/plugins/main/loopback github.com/containernetworking/plugins/plugins/meta/portmap"
    [probe]="./node/kg-probe k8s.io/kubernetes/cmd/kube-scheduler"
    [coredns]=. # peers/coredns/main.go: CoreDNS with the plugins the local Corefiles use
  )
  declare -A gdirs=([node]=. [containerd]=peers/containerd [probe]=. [coredns]=peers/coredns)
  declare -A gsrc=([node]=tools.go [containerd]=peers/containerd [probe]=node/kg-probe [coredns]=peers/coredns)
  # btrfs needs cgo; the node uses overlayfs
  declare -A gtags=([containerd]=no_btrfs)
  # kubelet and kube-proxy report the release they are built from (the Node's kubeletVersion)
  local kver flags
  kver=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
  declare -A gldflags=([node]="-s -w -X k8s.io/component-base/version.gitVersion=$kver -X k8s.io/component-base/version.gitMajor=$(echo "$kver" | cut -d. -f1 | tr -d v) -X k8s.io/component-base/version.gitMinor=$(echo "$kver" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean")
  # node-bin/: the node's binaries beside links to the default peers (kept apart from bin/, whose
  # cache <hash> they are not part of)
  nbin="$cache/node-bin"
  mkdir -p "$nbin"
  for g in containerd probe node coredns; do
    gdir=${gdirs[$g]}
    key=$( { echo "$common ${gtags[$g]:-} ${gldflags[$g]:-}"; find "${gsrc[$g]}" "$gdir/go.mod" "$gdir/go.sum" -maxdepth 2 -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) ! -name '*_test.go' -print | LC_ALL=C sort | while read -r f; do echo "$f"; cat "$f"; done; } | sha256sum | cut -c1-16)
    obj="$objects/node-$g-$key"
    if [ ! -d "$obj" ]; then
      echo "build-peers: building the real node's $g binaries (${gpkgs[$g]}) ..." >&2
      start=$(date +%s)
      rm -rf "$obj.tmp.$$" && mkdir -p "$obj.tmp.$$"
      # shellcheck disable=SC2086
      flags=("${goflags[@]}")
      [ -z "${gldflags[$g]:-}" ] || flags+=("-ldflags=${gldflags[$g]}")
      if ! (cd "$gdir" && go build "${flags[@]}" ${gtags[$g]:+-tags ${gtags[$g]}} -o "$obj.tmp.$$/" ${gpkgs[$g]}) >"$objects/build-node-$g.log" 2>&1; then
        echo "build-peers: FAILED to build the real node's $g binaries:" >&2
        tail -n 30 "$objects/build-node-$g.log" >&2
        rm -rf "$obj.tmp.$$"
        return 1
      fi
      mv "$obj.tmp.$$" "$obj"
      took=$(( $(date +%s) - start ))
      echo "node-$g $took" >>"$times"
      echo "build-peers: built the real node's $g binaries in ${took}s" >&2
    fi
    for b in "$obj"/*; do link_into "$nbin" "$b"; done
  done
  # crictl reads /etc/crictl.yaml, else the one beside it, and warns on every call that the first
  # does not exist unless --config names one; its callers name this file and the runtime endpoint
  # (each checkout's own containerd socket)
  [ -f "$nbin/crictl.yaml" ] || echo "timeout: 10" >"$nbin/crictl.yaml"
  # and the default peers the node runs beside them (kubectl, echo-basic, …)
  for b in "$bin"/*; do [ -f "$b" ] && link_into "$nbin" "$b"; done
}
link_into() { # dir file: a hard link (or copy) of file in dir, replaced atomically
  local to="$1/$(basename "$2")"
  [ "$2" -ef "$to" ] && return 0
  ln -f "$2" "$to.tmp.$$" 2>/dev/null || cp "$2" "$to.tmp.$$"
  mv -f "$to.tmp.$$" "$to"
}
# An earlier layout of this script linked the real node's binaries into bin/: take them out.
for b in kubelet kube-proxy containerd containerd-shim-runc-v2 ctr crictl bridge host-local loopback portmap kg-probe kube-scheduler coredns; do
  rm -f "$bin/$b"
done
[ -z "$node_wanted" ] || build_node || exit 1

[ -f "$cache/crds/.done" ] || fetch_crds || exit 1
echo "$cache"
