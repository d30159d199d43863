#!/usr/bin/env bash
# Writes a one-layer OCI image archive (what `ctr images import` reads) from static binaries:
#   hack/node/oci-archive.sh OUT.tar REF ENTRYPOINT-JSON USER FILE[=PATH]...
# e.g.  oci-archive.sh echo.tar registry.k8s.io/gateway-api/echo-basic:kg '["/echo-basic"]' 65534 bin/echo-basic bin/kg-probe
# Each FILE lands in / (or at PATH in the image) with mode 0755, owned by root. The image's
# environment is OCI_ENV (a JSON array, default ["PATH=/"]), its default arguments OCI_CMD (a JSON
# array, default none), its working directory OCI_WORKDIR (default /); ENTRYPOINT-JSON may be null.
# OCI_ROOTFS=DIR: the layer starts from DIR (a tree laid out as the image's /, owners as they are
# on disk) and the FILEs go on top. The layer is an uncompressed tar with fixed
# times, so the same binaries give the same image digest (and images of the same files share it).
set -euo pipefail
out=$1 ref=$2 entrypoint=$3 user=$4
shift 4
env_json=${OCI_ENV:-'["PATH=/"]'}
cmd_json=${OCI_CMD:-null}
workdir=${OCI_WORKDIR:-/}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root" "$work/layout/blobs/sha256"
owner=(--owner=0 --group=0)
if [ -n "${OCI_ROOTFS:-}" ]; then
  cp -a "$OCI_ROOTFS/." "$work/root/"
  owner=()
fi
for f in "$@"; do
  src=${f%%=*} dest=/$(basename "$f")
  [ "$src" = "$f" ] || dest=${f#*=}
  install -D -m 0755 "$src" "$work/root$dest"
done
tar --sort=name --mtime=@0 "${owner[@]}" --numeric-owner -C "$work/root" -cf "$work/layer.tar" .
blob() { # FILE: moves it into the layout's blobs, prints "<hex> <size>"
  local hex size
  hex=$(sha256sum "$1" | cut -d' ' -f1)
  size=$(stat -c %s "$1")
  mv "$1" "$work/layout/blobs/sha256/$hex"
  echo "$hex $size"
}
read -r layer_hex layer_size < <(blob "$work/layer.tar")
printf '{"architecture":"amd64","os":"linux","config":{"User":"%s","Entrypoint":%s,"Cmd":%s,"Env":%s,"WorkingDir":"%s"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$user" "$entrypoint" "$cmd_json" "$env_json" "$workdir" "$layer_hex" >"$work/config.json"
read -r config_hex config_size < <(blob "$work/config.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "$config_hex" "$config_size" "$layer_hex" "$layer_size" >"$work/manifest.json"
read -r manifest_hex manifest_size < <(blob "$work/manifest.json")
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$manifest_hex" "$manifest_size" "$ref" "${ref##*:}" >"$work/layout/index.json"
echo '{"imageLayoutVersion":"1.0.0"}' >"$work/layout/oci-layout"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/layout" -cf "$out.tmp.$$" .
mv "$out.tmp.$$" "$out"
