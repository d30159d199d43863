#!/usr/bin/env bash
# `npm run proxy:image`: the Bundled proxy's OCI image, Docker-free and reproducible (proxy/image).
# Builds (or finds cached) the caddy binary and the image builder with hack/build-peers.sh, then
# writes
#   dist/proxy-image/          an OCI image layout (skopeo copy oci:dist/proxy-image:REF …, crane push)
#   dist/proxy-image.tar       the same image as a tarball (docker load, crane push)
# and checks that its digest is the one of the image the local cluster's kubelet runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=$(bash "$root/hack/build-peers.sh" image | tail -n 1)
mkdir -p "$root/dist"
ref=$("$cache/bin/proxy-image" -binary "$cache/bin/caddy" -package-json "$root/package.json" \
  -out "$root/dist/proxy-image" -tar "$root/dist/proxy-image.tar")
if ! cmp -s "$root/dist/proxy-image/index.json" "$cache/image/index.json"; then
  echo "proxy-image: $ref differs from the image in $cache/image: the build is not reproducible" >&2
  exit 1
fi
echo "$ref"
echo "  OCI layout: dist/proxy-image   tarball: dist/proxy-image.tar   (push: docs/operations.md#the-proxy-image)"
