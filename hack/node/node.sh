#!/usr/bin/env bash
# The local cluster's node (README.md): containerd + runc + CNI (bridge, host-local, loopback,
# portmap) + the real kubelet + kube-scheduler + kube-proxy (iptables) + CoreDNS (a pod, see
# coredns.yaml), beside the control plane hack/cluster.sh runs.
#
#   hack/node/node.sh up      start it (the control plane must be up; hack/cluster.sh up
#                             starts both)
#   hack/node/node.sh down    stop it and undo what it did to the machine (pods, mounts, the
#                             bridge, cgroups, iptables rules, ip_forward)
#   hack/node/node.sh status  print what runs
#
# State: .local/node/ (KG_LOCAL_DIR moves it with the cluster's), logs: .local/logs/{containerd,
# real-kubelet,kube-scheduler,kube-proxy,services}.log. The Node is kengine-local (the kubelet's certificate in
# .local/pki names it), InternalIP 10.244.0.1 on the bridge kg-cni0 (in that certificate's SANs).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
local_dir="${KG_LOCAL_DIR:-$root/.local}"
pki="$local_dir/pki"
run="$local_dir/run"
logs="$local_dir/logs"
state="$local_dir/node"
sock="$state/containerd.sock"
bridge=kg-cni0
node_ip=10.244.0.1
pod_cidr=10.244.0.0/24
# The sandbox ("pause") image: kg-probe's pause mode, imported under the name containerd
# expects, so nothing is ever pulled.
pause_ref=registry.k8s.io/pause:3.10.1
echo_ref=registry.k8s.io/gateway-api/echo-basic:kg-node
probe_ref=kengine.io/kg-probe:kg-node
# CoreDNS's image (coredns.yaml names it) and the kube-dns Service's address, the kubelet's
# clusterDNS (in hack/cluster.sh's service CIDR).
coredns_ref=registry.k8s.io/coredns/coredns:v1.15.0
dns_ip=10.96.0.10
# Where services.ts forwards the API server for pods on the bridge address: not the API
# server's own port, which hack/cluster.sh restart-apiserver waits to be free on any address.
api_forward_port=16443
# Images the Gateway API and Ingress conformance suites and the tests name (import_images).
coredns_conformance_ref=registry.k8s.io/coredns/coredns:v1.12.2
ingress_echo_ref=k8s.gcr.io/ingressconformance/echoserver:v0.0.1
ingress_echo_digest=sha256:9b34b17f391f87fb2155f01da2f2f90b7a4a5c1110ed84cb5379faa4f570dc52
caddy28_ref=docker.io/library/caddy:2.8.4
caddy211_ref=docker.io/library/caddy:2.11
components=(containerd real-kubelet kube-scheduler kube-proxy services)

log() { printf 'node: %s\n' "$*" >&2; }
die() { printf 'node: error: %s\n' "$*" >&2; exit 1; }

pid_of() {
  local f="$run/$1.pid" pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

start() { # NAME CMD...
  local name=$1
  shift
  [ -z "$(pid_of "$name")" ] || return 0
  log "starting $name"
  setsid "$@" >>"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$run/$name.pid"
}

wait_for() { # WHAT SECONDS COMPONENT CMD...
  local what=$1 secs=$2 comp=$3
  shift 3
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ -z "$(pid_of "$comp")" ]; then
      tail -n 30 "$logs/$comp.log" >&2 || true
      die "$comp exited while waiting for $what (log: $logs/$comp.log)"
    fi
    [ $SECONDS -lt $deadline ] || { tail -n 30 "$logs/$comp.log" >&2; die "timed out after ${secs}s waiting for $what (log: $logs/$comp.log)"; }
    sleep 0.5
  done
}

# The leaf certificate of a client the node adds (kube-scheduler), signed by the cluster's CA.
leaf() { # NAME CN
  [ -f "$state/pki/$1.crt" ] && return 0
  mkdir -p "$state/pki"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$state/pki/$1.key" -out "$state/pki/$1.csr" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$state/pki/$1.ext"
  openssl x509 -req -in "$state/pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$state/pki/$1.ext" -out "$state/pki/$1.crt" 2>/dev/null
  rm -f "$state/pki/$1.csr" "$state/pki/$1.ext"
  chmod 600 "$state/pki/$1.key"
}

# Writes stdin to FILE only when it differs: kube-proxy exits when its configuration file
# changes, so an `up` on a running node must leave the files as they are.
put() { # FILE
  local tmp="$1.tmp.$$"
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv -f "$tmp" "$1"; fi
}

kubeconfig() { # FILE CERT KEY
  put "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kengine-local
  cluster: {server: "https://127.0.0.1:${KG_APISERVER_PORT:-6443}", certificate-authority: "$pki/ca.crt"}
users:
- name: u
  user: {client-certificate: "$2", client-key: "$3"}
contexts:
- name: kengine-local
  context: {cluster: kengine-local, user: u}
current-context: kengine-local
EOF
}

write_configs() { # BIN
  local bin=$1
  mkdir -p "$state/cni/net.d" "$state/cni/bin" "$state/cni/ipam" "$state/containerd" "$state/kubelet" "$state/pod-logs" "$state/images"
  for p in bridge host-local loopback portmap; do ln -sf "$bin/$p" "$state/cni/bin/$p"; done
  put "$state/cni/net.d/10-kg-node.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kg-node",
  "plugins": [
    {
      "type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {"type": "host-local", "dataDir": "$state/cni/ipam",
               "ranges": [[{"subnet": "$pod_cidr", "gateway": "$node_ip"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  # containerd 2.x (config version 3). NRI off (its socket is machine-wide); network
  # namespaces under the state dir; the host's runc; cgroupfs (no systemd here).
  put "$state/containerd/config.toml" <<EOF
version = 3
root = "$state/containerd/root"
state = "$state/containerd/state"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs"]

[grpc]
  address = "$sock"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$pause_ref"

[plugins."io.containerd.cri.v1.runtime"]
  netns_mounts_under_state_dir = true
  # This machine's root lacks CAP_SYS_RESOURCE: no oom_score_adj below containerd's own
  # (the kubelet asks -998 for sandboxes, runc's init would fail with EACCES).
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["$state/cni/bin"]
    conf_dir = "$state/cni/net.d"

[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF
  put "$state/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$sock
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
address: $node_ip
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $pki/kubelet.crt
tlsPrivateKeyFile: $pki/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
podLogsDir: $state/pod-logs
resolvConf: /etc/resolv.conf
clusterDNS: [$dns_ip]
# Imported images can not be pulled again: never collect them; evict on nothing but a full disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
protectKernelDefaults: false
serializeImagePulls: false
EOF
  leaf kube-scheduler system:kube-scheduler
  kubeconfig "$state/kube-scheduler.kubeconfig" "$state/pki/kube-scheduler.crt" "$state/pki/kube-scheduler.key"
  # kube-proxy as system:kube-proxy (the default ClusterRoleBinding system:node-proxier).
  leaf kube-proxy system:kube-proxy
  kubeconfig "$state/kube-proxy.kubeconfig" "$state/pki/kube-proxy.crt" "$state/pki/kube-proxy.key"
  # iptables mode. masqueradeAll: without br_netfilter a reply from a pod on the same bridge
  # would skip the un-DNAT; SNAT to the bridge's address sends it back through the host.
  # No conntrack sysctls, no route_localnet (localhostNodePorts off).
  put "$state/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$state/kube-proxy.kubeconfig"}
hostnameOverride: kengine-local
mode: iptables
clusterCIDR: $pod_cidr
iptables: {masqueradeAll: true, localhostNodePorts: false}
conntrack: {maxPerCore: 0}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
EOF
}

# What the node changes on the machine, remembered once before the first change so down can undo it.
remember_machine() {
  [ -f "$state/machine/saved" ] && return 0
  mkdir -p "$state/machine"
  iptables-save >"$state/machine/iptables" 2>/dev/null || true
  ip6tables-save >"$state/machine/ip6tables" 2>/dev/null || true
  cat /proc/sys/net/ipv4/ip_forward >"$state/machine/ip_forward"
  # containerd's shim sockets and runc's state live under /run/containerd whatever its config says
  [ -e /run/containerd ] || touch "$state/machine/no-run-containerd"
  # libcni's result cache (not configurable through containerd)
  [ -e /var/lib/cni ] || touch "$state/machine/no-var-lib-cni"
  if command -v nft >/dev/null; then nft list tables >"$state/machine/nft-tables" 2>/dev/null || true; fi
  touch "$state/machine/saved"
}

# Names an imported image also goes by (containerd resolves the exact name, tag included).
tag_image() { # BIN REF NAME...
  local ctr=("$1/ctr" --address "$sock" -n k8s.io) ref=$2 name
  shift 2
  for name in "$@"; do
    "${ctr[@]}" images tag --force --local "$ref" "$name" >>"$logs/containerd.log" 2>&1 ||
      die "could not tag $ref as $name (log: $logs/containerd.log)"
  done
}

import_images() { # BIN
  local bin=$1 ctr=("$1/ctr" --address "$sock" -n k8s.io)
  bash "$root/hack/node/oci-archive.sh" "$state/images/pause.tar" "$pause_ref" '["/kg-probe","pause"]' 65535 "$bin/kg-probe"
  bash "$root/hack/node/oci-archive.sh" "$state/images/echo.tar" "$echo_ref" '["/echo-basic"]' 65534 "$bin/echo-basic" "$bin/kg-probe"
  bash "$root/hack/node/oci-archive.sh" "$state/images/probe.tar" "$probe_ref" '["/kg-probe"]' 65534 "$bin/kg-probe"
  bash "$root/hack/node/oci-archive.sh" "$state/images/coredns.tar" "$coredns_ref" '["/coredns"]' 65532 "$bin/coredns"
  # The Gateway API conformance suite's UDP backend (v1.6.1's manifests) runs CoreDNS as the
  # image's user with NET_BIND_SERVICE added: root, as a capability can not be added to a
  # non-root user here. The same layer as the image above.
  bash "$root/hack/node/oci-archive.sh" "$state/images/coredns-root.tar" "$coredns_conformance_ref" '["/coredns"]' 0 "$bin/coredns"
  # The upstream Ingress conformance suite's echo server (hack/peers/ingress-conformance).
  bash "$root/hack/node/oci-archive.sh" "$state/images/ingress-echo.tar" "$ingress_echo_ref" '["/echoserver"]' 65534 "$bin/ingress-echo=/echoserver"
  # Stock Caddy 2.8.4 (hack/peers/caddy-2.8: the release the Kengine flavour forks), laid out as
  # the official image is: /usr/bin/caddy, root, the Caddyfile command as default arguments;
  # kg-probe as /bin/test, the one busybox applet the tests' exec probes use.
  # Only the tests use it: built by the test run's hack/build-peers.sh (every peer) before its
  # hack/cluster.sh up, which imports it then; npm start does not wait for its build.
  local images=(pause echo probe coredns coredns-root ingress-echo)
  if [ -x "$bin/caddy-2.8" ]; then
    stock_caddy "$state/images/caddy-2.8.tar" "$caddy28_ref" "$bin/caddy-2.8" "$bin/kg-probe"
    images+=(caddy-2.8)
  fi
  for i in "${images[@]}"; do
    "${ctr[@]}" images import --local --platform linux/amd64 "$state/images/$i.tar" >>"$logs/containerd.log" 2>&1 ||
      die "could not import $i.tar into containerd (log: $logs/containerd.log)"
  done
  # The echo image under the names the samples, the tests and the Gateway API conformance suites
  # use (v1.6.1's manifests and v1.7.0's; echo-advanced too, whose requests echo-basic answers).
  local tag
  for tag in v1 v1.6.1 v20251204-v1.4.1 v1.5.1 v1.6.0-dev.2 v1.6.0-dev.3; do
    tag_image "$bin" "$echo_ref" "registry.k8s.io/gateway-api/echo-basic:$tag"
  done
  tag_image "$bin" "$echo_ref" registry.k8s.io/gateway-api/echo-advanced:v1.5.1 \
    registry.k8s.io/gateway-api/conformance/echo-basic:v0.1.0 \
    registry.k8s.io/gateway-api/conformance/echo-basic:v0.2.0 \
    registry.k8s.io/gateway-api/conformance/echo-advanced:v0.1.0
  # The Ingress suite names its echo server by tag and digest; the kubelet looks the image up by
  # the name without the tag (repository@digest), which this import can only have as a name.
  tag_image "$bin" "$ingress_echo_ref" "${ingress_echo_ref%:*}@$ingress_echo_digest"
  [ ! -x "$bin/caddy-2.8" ] || tag_image "$bin" "$caddy28_ref" docker.io/library/caddy:2.8
  # Pepr's controller image (deployed mode: `npm run build`'s Deployments, the Helm chart), built
  # from the installed pepr package and the host's node once per key into .local/node-images/,
  # which outlives `down` (pepr-image.sh).
  local pepr_tar
  pepr_tar=$(bash "$root/hack/node/pepr-image.sh" "$local_dir/node-images") &&
    "${ctr[@]}" images import --local --platform linux/amd64 "$pepr_tar" >>"$logs/containerd.log" 2>&1 ||
    log "warning: no Pepr controller image: deployed mode can not run (log: $logs/containerd.log)"
  # The Bundled proxy's image, an OCI layout build-peers.sh writes (its index names it in full).
  local layout
  layout="$(dirname "$bin")/image"
  if [ -f "$layout/index.json" ]; then
    tar -C "$layout" -cf "$state/images/proxy.tar" . &&
      "${ctr[@]}" images import --local --platform linux/amd64 "$state/images/proxy.tar" >>"$logs/containerd.log" 2>&1 ||
      log "warning: could not import the proxy image from $layout (log: $logs/containerd.log)"
    # Stock Caddy as the tests name it (docker.io/library/caddy:2.11, e.g. an external auth
    # server, a Caddyfile in /etc/caddy): the Bundled build's binary, Caddy 2.11.9, in the
    # official image's layout as for 2.8 above.
    local caddy
    caddy=$(layout_file "$layout" usr/bin/caddy "$state/images/caddy-2.11") &&
      stock_caddy "$state/images/caddy-2.11.tar" "$caddy211_ref" "$caddy" "$bin/kg-probe" &&
      "${ctr[@]}" images import --local --platform linux/amd64 "$state/images/caddy-2.11.tar" >>"$logs/containerd.log" 2>&1 ||
      log "warning: no stock Caddy 2.11 image (log: $logs/containerd.log)"
    rm -rf "$state/images/caddy-2.11"
  fi
}

# An image laid out as the official Caddy image: /usr/bin/caddy, root, the Caddyfile in
# /etc/caddy as its default command, XDG directories /config and /data; PROBE as /bin/test.
stock_caddy() { # OUT.tar REF CADDY PROBE
  OCI_ENV='["PATH=/usr/bin:/bin:/","XDG_CONFIG_HOME=/config","XDG_DATA_HOME=/data"]' \
    OCI_CMD='["caddy","run","--config","/etc/caddy/Caddyfile","--adapter","caddyfile"]' \
    bash "$root/hack/node/oci-archive.sh" "$1" "$2" null 0 "$3=/usr/bin/caddy" "$4=/bin/test"
}

# Extracts FILE from the layers of the OCI layout's first image into DIR, prints its path.
layout_file() { # LAYOUT FILE DIR
  local layout=$1 file=$2 dir=$3 layer
  mkdir -p "$dir"
  for layer in $(node -e '
    const fs = require("fs"), [, layout] = process.argv;
    const blob = d => JSON.parse(fs.readFileSync(`${layout}/blobs/sha256/${d.slice(7)}`, "utf8"));
    const index = JSON.parse(fs.readFileSync(`${layout}/index.json`, "utf8"));
    for (const l of blob(index.manifests[0].digest).layers) console.log(l.digest.slice(7));
  ' "$layout"); do
    tar -xf "$layout/blobs/sha256/$layer" -C "$dir" "$file" 2>/dev/null && { echo "$dir/$file"; return 0; }
  done
  return 1
}

up() {
  [ "$(id -u)" = 0 ] || die "the real node needs root (containerd, runc, network namespaces, cgroups)"
  command -v runc >/dev/null || die "runc is not installed (apt-get install -y runc)"
  command -v iptables >/dev/null || die "iptables is not installed (apt-get install -y iptables)"
  [ -f "$pki/kubelet.crt" ] || die "no cluster PKI in $pki: start the control plane first (hack/cluster.sh up)"
  local cache bin kc
  cache=$(bash "$root/hack/build-peers.sh" node echo-basic kubectl ingress-echo | tail -n 1)
  bin="$cache/node-bin"
  kc=("$bin/kubectl" --kubeconfig "$local_dir/kubeconfig")
  mkdir -p "$run" "$logs" "$state"
  remember_machine
  write_configs "$bin"
  echo "$bin" >"$state/bin"
  # The bridge and its address exist before the kubelet starts: the node IP must be local.
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    ip link add "$bridge" type bridge
    ip addr add "$node_ip/24" dev "$bridge"
  fi
  ip link set "$bridge" up

  start containerd env PATH="$bin:$PATH" "$bin/containerd" --config "$state/containerd/config.toml"
  wait_for "containerd's CRI" 60 containerd "$bin/crictl" --config "$bin/crictl.yaml" --runtime-endpoint "unix://$sock" info
  import_images "$bin"

  start real-kubelet "$bin/kubelet" --config "$state/kubelet/config.yaml" \
    --kubeconfig "$local_dir/kubelet.kubeconfig" --root-dir "$state/kubelet/root" \
    --cert-dir "$state/kubelet/pki" --hostname-override kengine-local --node-ip "$node_ip" --v=1
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$state/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$state/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "$state/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 10259 --leader-elect=false --v=1
  start kube-proxy "$bin/kube-proxy" --config "$state/kube-proxy.yaml" --v=1
  wait_for "the Node kengine-local to be Ready" 120 real-kubelet \
    "${kc[@]}" wait --for condition=Ready --timeout=1s node/kengine-local
  wait_for "kube-proxy's /healthz" 60 kube-proxy curl -fsS http://127.0.0.1:10256/healthz
  # What no upstream component gives a node without a cloud (services.ts): LoadBalancer
  # addresses, and the API server for pods on the bridge address, where the `kubernetes`
  # Service's endpoints point (the API server runs --endpoint-reconciler-type none).
  [ -n "$(pid_of services)" ] || : >"$logs/services.log"
  start services "$root/node_modules/.bin/tsx" "$root/hack/node/services.ts" \
    --kubeconfig "$local_dir/node-controllers.kubeconfig" --api-listen "$node_ip:$api_forward_port"
  wait_for "the node's services" 60 services grep -q "node services ready" "$logs/services.log"
  "${kc[@]}" apply -f - >/dev/null <<EOF
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kubernetes
  namespace: default
  labels: {kubernetes.io/service-name: kubernetes, endpointslice.kubernetes.io/managed-by: kengine-local}
addressType: IPv4
endpoints: [{addresses: ["$node_ip"], conditions: {ready: true}}]
ports: [{name: https, port: $api_forward_port, protocol: TCP}]
EOF
  # CoreDNS, a pod reading the API server through the `kubernetes` Service (so after the above).
  "${kc[@]}" apply -f "$root/hack/node/coredns.yaml" >/dev/null
  wait_for "CoreDNS to be ready (kube-system/coredns)" 120 real-kubelet \
    "${kc[@]}" -n kube-system wait --for condition=Available --timeout=1s deployment/coredns
  log "ready: node kengine-local runs $("${kc[@]}" get node kengine-local -o jsonpath='{.status.nodeInfo.containerRuntimeVersion}')"
}

stop_one() {
  local name=$1 pid
  pid=$(pid_of "$name")
  if [ -n "$pid" ]; then
    log "stopping $name"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$run/$name.pid"
}

# Removes the rules and chains of TABLE-SAVE output now that were not in the saved copy.
undo_iptables() { # iptables|ip6tables SAVED
  local cmd=$1 saved=$2 table line chain
  [ -f "$saved" ] || return 0
  local now
  now=$("$cmd-save" 2>/dev/null) || return 0
  table=
  while IFS= read -r line; do
    case "$line" in
    \*) ;;
    \**) table=${line#\*} ;;
    -A*) grep -qxF -- "$line" "$saved" || eval "$cmd -t $table ${line/#-A/-D}" 2>/dev/null || true ;;
    esac
  done <<<"$now"
  table=
  while IFS= read -r line; do
    case "$line" in
    \**) table=${line#\*} ;;
    :*)
      chain=${line#:}
      chain=${chain%% *}
      grep -q "^:$chain " "$saved" || { "$cmd" -t "$table" -F "$chain" 2>/dev/null; "$cmd" -t "$table" -X "$chain" 2>/dev/null || true; }
      ;;
    esac
  done <<<"$now"
}

down() {
  local bin="" m d
  [ -f "$state/bin" ] && bin=$(cat "$state/bin")
  stop_one services
  stop_one kube-proxy
  stop_one kube-scheduler
  stop_one real-kubelet
  # Every pod sandbox goes through CNI DEL (veths, IPs, netns) while containerd still runs.
  if [ -n "$(pid_of containerd)" ] && [ -n "$bin" ]; then
    timeout 60 "$bin/crictl" --config "$bin/crictl.yaml" --runtime-endpoint "unix://$sock" rmp -fa >/dev/null 2>&1 || true
  fi
  stop_one containerd
  # Shims left behind (containerd killed before its pods): their sockets and tasks are ours.
  for d in /proc/[0-9]*; do
    if tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -q "containerd-shim-runc-v2 .*-address $sock"; then
      kill -KILL "${d#/proc/}" 2>/dev/null || true
    fi
  done
  # Mounts under the node's state (overlay roots, volumes, netns), deepest first.
  if [ -d "$state" ]; then
    while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(awk -v s="$state/" 'index($2, s) == 1 { print $2 }' /proc/mounts | sort -r)
  fi
  ip link del "$bridge" 2>/dev/null || true
  # The kubelet's pod cgroups (cgroupfs driver: /kubepods in every v1 hierarchy).
  for d in /sys/fs/cgroup/*/kubepods; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  if [ -f "$state/machine/saved" ]; then
    undo_iptables iptables "$state/machine/iptables"
    undo_iptables ip6tables "$state/machine/ip6tables"
    cat "$state/machine/ip_forward" >/proc/sys/net/ipv4/ip_forward
    # iptables-nft leaves the tables it made (empty once the rules above are gone)
    if [ -f "$state/machine/nft-tables" ]; then
      nft list tables 2>/dev/null | while read -r _ family name; do
        grep -qxF "table $family $name" "$state/machine/nft-tables" || nft delete table "$family" "$name" 2>/dev/null || true
      done
    fi
    [ ! -f "$state/machine/no-run-containerd" ] || rm -rf /run/containerd
    [ ! -f "$state/machine/no-var-lib-cni" ] || rm -rf /var/lib/cni
  fi
  rm -rf "$state"
  log "stopped"
}

status() {
  local c pid
  for c in "${components[@]}"; do
    pid=$(pid_of "$c")
    if [ -n "$pid" ]; then printf '%-24s running (pid %s)\n' "$c" "$pid"; else printf '%-24s stopped\n' "$c"; fi
  done
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
configs) write_configs "$2" ;; # only the config files, for a look at containerd/CNI alone
*) die "usage: hack/node/node.sh up|down|status" ;;
esac
