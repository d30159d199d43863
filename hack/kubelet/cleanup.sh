#!/usr/bin/env bash
# Removes everything the local kubelet created, even after it crashed: processes in kg-*
# network namespaces, the namespaces, kg-* links (veths, the kg-br0 bridge) and mount points
# it had to create on the host. Run by `hack/cluster.sh down` after the kubelet is stopped.
#
#   hack/kubelet/cleanup.sh [STATE_DIR]     (STATE_DIR: .local/kubelet; lists created paths)
set -uo pipefail

state="${1:-}"

# A kubelet still running would recreate what we remove; stop it first.
if [ -n "$state" ] && [ -f "$state/kubelet.pid" ]; then
  pid=$(cat "$state/kubelet.pid")
  if kill -0 "$pid" 2>/dev/null && grep -q 'hack/kubelet/main.ts' "/proc/$pid/cmdline" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
fi

namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep '^kg-' || true; }

# Container processes: TERM, a short grace, then KILL.
for ns in $(namespaces); do
  for p in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$p" 2>/dev/null || true; done
done
for _ in $(seq 1 20); do
  left=0
  for ns in $(namespaces); do [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && left=1; done
  [ $left = 0 ] && break
  sleep 0.25
done
for ns in $(namespaces); do
  for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  ip netns delete "$ns" 2>/dev/null || true
done

for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep '^kg-' || true); do
  ip link delete "$link" 2>/dev/null || true
done

rm -f /run/kengine-local-kubelet.json

# The routing guard for traffic from the pods (see network.ts).
while ip rule del priority 27495 2>/dev/null; do :; done
ip route flush table 27495 2>/dev/null || true

# Mount points created on the host for volume mounts (only if still empty).
if [ -n "$state" ] && [ -f "$state/created-paths" ]; then
  sort -ru "$state/created-paths" | while read -r p; do
    [ -n "$p" ] || continue
    if [ -d "$p" ]; then
      find "$p" -depth -type d -empty -delete 2>/dev/null || true
    elif [ -f "$p" ] && [ ! -s "$p" ]; then
      rm -f "$p"
    fi
  done
fi

left_ns=$(namespaces)
left_links=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep '^kg-' || true)
left_rules=$(ip rule show priority 27495 2>/dev/null || true)
if [ -n "$left_ns$left_links$left_rules" ]; then
  echo "cleanup: left behind: $left_ns $left_links $left_rules" >&2
  exit 1
fi
