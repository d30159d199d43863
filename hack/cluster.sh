#!/usr/bin/env bash
# The local platform: etcd + kube-apiserver + kube-controller-manager on loopback and one node,
# built by hack/build-peers.sh. No Docker needed.
#
#   hack/cluster.sh up       start (idempotent), install the Gateway API CRDs, write .local/kubeconfig
#   hack/cluster.sh down     stop everything it started and wipe the cluster's state
#   hack/cluster.sh status   print what runs
#   hack/cluster.sh restart-apiserver   stop kube-apiserver and start it again, same flags
#
# Ports (loopback only): etcd 2379/2380, kube-apiserver 6443, kube-controller-manager 10257.
# Override with KG_APISERVER_PORT, KG_ETCD_PORT, KG_KCM_PORT; KG_LOCAL_DIR moves the state
# (default .local/) so a second instance can run beside the first (KG_NO_KUBELET=1 for it).
# The node: hack/node/node.sh (containerd, runc, CNI, the kubelet, kube-scheduler, kube-proxy,
# CoreDNS, the local load balancer; needs root, runc and iptables; hack/node/README.md).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
local_dir="${KG_LOCAL_DIR:-$root/.local}"
pki="$local_dir/pki"
run="$local_dir/run"
logs="$local_dir/logs"
data="$local_dir/etcd"
kubeconfig="$local_dir/kubeconfig"
# An instance remembers its ports, so KG_LOCAL_DIR alone selects it later.
# shellcheck disable=SC1091
[ -f "$local_dir/ports.env" ] && . "$local_dir/ports.env"
api_port="${KG_APISERVER_PORT:-6443}"
etcd_port="${KG_ETCD_PORT:-2379}"
etcd_peer_port=$((etcd_port + 1))
kcm_port="${KG_KCM_PORT:-10257}"
service_cidr="${KG_SERVICE_CIDR:-10.96.0.0/16}"
service_ip="${KG_KUBERNETES_SERVICE_IP:-10.96.0.1}"
components=(etcd kube-apiserver kube-controller-manager)
# KENGINE_NODE=local selected our own kubelet (hack/kubelet), retired once everything passed on
# the real node: say so rather than start something else than asked for.
case "${KENGINE_NODE:-real}" in
  real) ;;
  local) printf 'cluster: error: KENGINE_NODE=local (the local kubelet, hack/kubelet) was retired: the node is the real one (hack/node/README.md); unset KENGINE_NODE\n' >&2; exit 1 ;;
  *) printf 'cluster: error: KENGINE_NODE is real (or unset), not %s\n' "$KENGINE_NODE" >&2; exit 1 ;;
esac

log() { printf 'cluster: %s\n' "$*" >&2; }
die() { printf 'cluster: error: %s\n' "$*" >&2; exit 1; }

pid_of() { # prints the pid of a running component, or nothing
  local f="$run/$1.pid"
  [ -f "$f" ] || return 0
  local pid
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

# ---------------------------------------------------------------------------- certificates
gen_pki() {
  mkdir -p "$pki"
  cd "$pki"
  if [ ! -f ca.crt ]; then
    log "generating certificates in $pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kengine-local-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
  fi
  # leaf NAME CN O SANS EXTKEYUSAGE
  leaf() {
    local name=$1 cn=$2 o=$3 sans=$4 eku=$5
    [ -f "$name.crt" ] && return 0
    local subj="/CN=$cn"
    [ -n "$o" ] && subj="/O=$o/CN=$cn"
    openssl req -newkey rsa:2048 -nodes -subj "$subj" -keyout "$name.key" -out "$name.csr" 2>/dev/null
    {
      echo "basicConstraints=CA:FALSE"
      echo "keyUsage=critical,digitalSignature,keyEncipherment"
      echo "extendedKeyUsage=$eku"
      [ -n "$sans" ] && echo "subjectAltName=$sans"
    } >"$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile "$name.ext" -out "$name.crt" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
  }
  leaf apiserver kube-apiserver "" \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:$service_ip" \
    serverAuth
  leaf etcd etcd "" "DNS:localhost,IP:127.0.0.1" "serverAuth,clientAuth"
  leaf admin kubernetes-admin system:masters "" clientAuth
  leaf apiserver-kubelet-client kube-apiserver-kubelet-client system:masters "" clientAuth
  leaf controller-manager system:kube-controller-manager "" "" clientAuth
  # The kubelet's client cert doubles as its serving cert (tlsCertFile) on the node's
  # InternalIP, the pod bridge address 10.244.0.1 (kube-apiserver dials it for kubectl logs).
  if [ -f kubelet.crt ] && ! openssl x509 -in kubelet.crt -noout -ext subjectAltName 2>/dev/null | grep -q 10.244.0.1; then
    rm -f kubelet.crt kubelet.key
  fi
  leaf kubelet system:node:kengine-local system:nodes "DNS:localhost,DNS:kengine-local,IP:127.0.0.1,IP:10.244.0.1" "serverAuth,clientAuth"
  # What a kubelet identity may not do (write Service status: the local load balancer) runs as
  # this user, limited by the kengine-local:node-controllers ClusterRole (see node_services_rbac).
  leaf node-controllers kengine-local:node-controllers "" "" clientAuth
  if [ ! -f sa.key ]; then
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  fi
  chmod 600 ./*.key
  cd - >/dev/null
}

write_kubeconfig() { # FILE USER-CERT-NAME
  local file=$1 user=$2
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kengine-local
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $pki/ca.crt
users:
- name: $user
  user:
    client-certificate: $pki/$user.crt
    client-key: $pki/$user.key
contexts:
- name: kengine-local
  context: {cluster: kengine-local, user: $user}
current-context: kengine-local
EOF
}

# ---------------------------------------------------------------------------- processes
start() { # NAME CMD...   starts a component in its own session, logs to .local/logs/NAME.log
  local name=$1
  shift
  if [ -n "$(pid_of "$name")" ]; then return 0; fi
  log "starting $name"
  setsid "$@" >>"$logs/$name.log" 2>&1 </dev/null &
  echo $! >"$run/$name.pid"
}

wait_for() { # DESCRIPTION SECONDS COMPONENT CMD...
  local what=$1 secs=$2 comp=$3
  shift 3
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ -z "$(pid_of "$comp")" ]; then
      tail -n 20 "$logs/$comp.log" >&2 || true
      die "$comp exited while waiting for $what (log: $logs/$comp.log)"
    fi
    [ $SECONDS -lt $deadline ] || die "timed out after ${secs}s waiting for $what (log: $logs/$comp.log)"
    sleep 0.5
  done
}

port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }

# Audit log at Metadata level, nothing else; 20 MB per file, 2 old files kept:
# - status-subresource writes of the Gateway API and our own API (who wrote which object's
#   status, and when): tests/integration/controller-handover.test.ts proves only the leader writes;
# - HTTPRoute creates, whose audit annotations say when the API server could not reach a webhook
#   and admitted the route anyway ("failed-open"): tests/support/deployed-checks.ts tells that
#   apart from our admission letting a bad route through;
# - Namespace creates and deletes: who made or deleted a namespace, when (a suite's namespace
#   gone mid-scenario).
write_audit_policy() {
  cat >"$local_dir/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [update, patch]
  resources:
  - {group: gateway.networking.k8s.io, resources: ["*/status"]}
  - {group: gateway.kengine.io, resources: ["*/status"]}
- level: Metadata
  verbs: [create]
  resources:
  - {group: gateway.networking.k8s.io, resources: [httproutes]}
- level: Metadata
  verbs: [create, delete, deletecollection]
  resources:
  - {group: "", resources: [namespaces]}
- level: None
EOF
}

start_apiserver() { # BIN-DIR   starts kube-apiserver unless it runs, waits for /readyz
  local bin=$1
  if [ -z "$(pid_of kube-apiserver)" ]; then
    port_free "$api_port" || die "port $api_port (kube-apiserver) is in use by another process"
    write_audit_policy
    start kube-apiserver "$bin/kube-apiserver" \
      --etcd-servers "http://127.0.0.1:$etcd_port" \
      --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
      --endpoint-reconciler-type none \
      --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
      --client-ca-file "$pki/ca.crt" \
      --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
      --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
      --kubelet-certificate-authority "$pki/ca.crt" \
      --kubelet-preferred-address-types InternalIP,Hostname \
      --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
      --service-account-issuer https://kubernetes.default.svc.cluster.local \
      --service-cluster-ip-range "$service_cidr" \
      --authorization-mode Node,RBAC --allow-privileged=true \
      --enable-priority-and-fairness=false --profiling=false --v=1 \
      --enable-aggregator-routing=true \
      --feature-gates ClusterTrustBundle=true \
      --runtime-config certificates.k8s.io/v1beta1/clustertrustbundles=true \
      --audit-policy-file "$local_dir/audit-policy.yaml" --audit-log-path "$logs/audit.log" \
      --audit-log-format json --audit-log-maxsize 20 --audit-log-maxbackup 2
  fi
  wait_for "kube-apiserver /readyz" 120 kube-apiserver \
    curl -fsS --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$api_port/readyz"
}

up() {
  local cache bin
  # What the platform and npm start need (tests build the rest, e.g. caddy-2.8, on demand).
  cache=$(bash "$root/hack/build-peers.sh" main | tail -n 1)
  bin="$cache/bin"
  mkdir -p "$run" "$logs" "$data" "$local_dir/bin"
  for b in kubectl etcd kube-apiserver kube-controller-manager caddy echo-basic; do
    ln -sf "$bin/$b" "$local_dir/bin/$b"
  done
  printf 'KG_APISERVER_PORT=${KG_APISERVER_PORT:-%s}\nKG_ETCD_PORT=${KG_ETCD_PORT:-%s}\nKG_KCM_PORT=${KG_KCM_PORT:-%s}\n' \
    "$api_port" "$etcd_port" "$kcm_port" >"$local_dir/ports.env"
  [ "${KG_NO_KUBELET:-}" = 1 ] && echo "KG_NO_KUBELET=1" >>"$local_dir/ports.env"
  gen_pki
  write_kubeconfig "$kubeconfig" admin
  write_kubeconfig "$local_dir/controller-manager.kubeconfig" controller-manager
  write_kubeconfig "$local_dir/kubelet.kubeconfig" kubelet
  write_kubeconfig "$local_dir/node-controllers.kubeconfig" node-controllers

  if [ -z "$(pid_of etcd)" ]; then
    port_free "$etcd_port" || die "port $etcd_port (etcd) is in use by another process"
    start etcd "$bin/etcd" --name kengine-local --data-dir "$data" \
      --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
      --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
      --initial-cluster "kengine-local=http://127.0.0.1:$etcd_peer_port" \
      --listen-metrics-urls "" --log-level warn --quota-backend-bytes 4294967296
  fi
  wait_for "etcd" 60 etcd curl -fsS "http://127.0.0.1:$etcd_port/health"

  # An API server started by an older cluster.sh (no audit log, webhooks dialled through
  # ClusterIPs that nothing answers here, or no ClusterTrustBundle API): restart it with
  # today's flags.
  local apid
  apid=$(pid_of kube-apiserver)
  if [ -n "$apid" ] && ! { tr '\0' '\n' <"/proc/$apid/cmdline" 2>/dev/null | grep -qxF -- --audit-policy-file &&
    tr '\0' '\n' <"/proc/$apid/cmdline" | grep -qxF -- --enable-aggregator-routing=true &&
    tr '\0' '\n' <"/proc/$apid/cmdline" | grep -qxF -- ClusterTrustBundle=true; }; then
    log "kube-apiserver runs with older flags: restarting it"
    restart_apiserver
  fi
  start_apiserver "$bin"

  if [ -z "$(pid_of kube-controller-manager)" ]; then
    start kube-controller-manager "$bin/kube-controller-manager" \
      --kubeconfig "$local_dir/controller-manager.kubeconfig" \
      --authentication-kubeconfig "$local_dir/controller-manager.kubeconfig" \
      --authorization-kubeconfig "$local_dir/controller-manager.kubeconfig" \
      --bind-address 127.0.0.1 --secure-port "$kcm_port" \
      --leader-elect=false --use-service-account-credentials \
      --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
      --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
      --controllers '*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller' \
      --v=1
  fi

  local kc=("$bin/kubectl" --kubeconfig "$kubeconfig")
  # The Gateway API CRDs (experimental channel: every kind the controller handles).
  "${kc[@]}" apply --server-side --force-conflicts -f "$cache/crds/experimental/" >/dev/null
  # Our own CRDs (per-proxy status).
  "${kc[@]}" apply --server-side --force-conflicts -f "$root/deploy/crds/" >/dev/null
  "${kc[@]}" wait --for condition=Established --timeout=60s crd --all >/dev/null
  wait_for "the default ServiceAccount" 60 kube-controller-manager "${kc[@]}" get serviceaccount default -n default

  if [ "${KG_NO_KUBELET:-}" != 1 ]; then
    # The real node (containerd, runc, CNI, the kubelet; hack/node/README.md).
    node_services_rbac "${kc[@]}" # the node's load balancer writes Service status with these rights
    bash "$root/hack/node/node.sh" up
  fi
  log "ready: kubectl --kubeconfig $kubeconfig get gatewayclasses"
}

# The node's services (hack/node/services.ts) write LoadBalancer status (a cloud controller's
# job) as kengine-local:node-controllers, with exactly these rights.
node_services_rbac() { # KUBECTL...
  "$@" apply -f - >/dev/null <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "kengine-local:node-controllers"}
rules:
- {apiGroups: [""], resources: [services], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [services/status], verbs: [patch, update]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [get, list, watch]}
- {apiGroups: ["", events.k8s.io], resources: [events], verbs: [create, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kengine-local:node-controllers"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kengine-local:node-controllers"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "kengine-local:node-controllers"}
EOF
}

stop_one() { # NAME
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

down() {
  local i
  # The node, if it ran: its pods, mounts, bridge and rules first.
  if [ -d "$local_dir/node" ]; then bash "$root/hack/node/node.sh" down || true; fi
  for ((i = ${#components[@]} - 1; i >= 0; i--)); do stop_one "${components[$i]}"; done
  rm -rf "$data"
  log "stopped"
}

# Stops kube-apiserver alone and starts it again with the same flags (e2e: watches must resume).
restart_apiserver() {
  [ -n "$(pid_of kube-apiserver)" ] || die "kube-apiserver is not running (hack/cluster.sh up)"
  local bin
  bin=$(dirname "$(readlink -f "$local_dir/bin/kube-apiserver")")
  stop_one kube-apiserver
  local deadline=$((SECONDS + 30))
  until port_free "$api_port"; do
    [ $SECONDS -lt $deadline ] || die "port $api_port still in use 30s after kube-apiserver stopped"
    sleep 0.2
  done
  start_apiserver "$bin"
  log "kube-apiserver restarted"
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
  status) status; if [ -d "$local_dir/node" ]; then bash "$root/hack/node/node.sh" status || true; fi ;;
  restart-apiserver) restart_apiserver ;;
  *) die "usage: hack/cluster.sh up|down|status|restart-apiserver" ;;
esac
