#!/usr/bin/env bash
# Pepr's controller image for deployed mode on the real node, as an OCI archive for
# `ctr images import`:
#   hack/node/pepr-image.sh CACHE-DIR    prints the archive's path (built once per key)
# The image is laid out as Pepr's own: `node` is the entrypoint, /app the working directory
# (owned by uid 65532, the Deployments' user: the controller writes /app/module-<hash>.js there)
# and /app/node_modules holds pepr with the production dependencies of this repository's
# package-lock. The generated Deployments run it unmodified:
# args /app/node_modules/pepr/dist/controller.js <hash>, the module from the Secret at /app/load.
# The node executable is the host's, with the shared libraries it links (ldd).
# Named ghcr.io/defenseunicorns/pepr/controller:v<installed pepr version>, what `npm run build`
# and the Helm chart name.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cache=$1
nm="$root/node_modules"
node_bin=$(readlink -f "$(command -v node)")
version=$(node -p "require('$nm/pepr/package.json').version")
ref="ghcr.io/defenseunicorns/pepr/controller:v$version"
# Top-level packages of the production closure as package-lock.json records it (what
# `npm ci --omit=dev` installs: every package not marked dev, if present); nested node_modules
# come with their parent.
pkgs=$(cd "$root" && node -e '
  const fs = require("fs");
  for (const [path, p] of Object.entries(require("./package-lock.json").packages)) {
    const name = path.slice("node_modules/".length);
    if (!path.startsWith("node_modules/") || name.includes("/node_modules/") || p.dev) continue;
    if (fs.existsSync(path)) console.log(name);
  }' | sort -u)
[ -n "$pkgs" ] || { echo "pepr-image: package-lock.json lists no production packages" >&2; exit 1; }
key=$( {
  echo "$ref"
  sha256sum "$node_bin" "$root/package-lock.json" "$root/hack/node/pepr-image.sh" "$root/hack/node/oci-archive.sh"
  echo "$pkgs"
} | sha256sum | cut -c1-16)
out="$cache/pepr-controller-$key.tar"
if [ ! -f "$out" ]; then
  mkdir -p "$cache"
  rm -f "$cache"/pepr-controller-*.tar # one image at a time: each is ~300 MB
  rootfs=$(mktemp -d)
  trap 'rm -rf "$rootfs"' EXIT
  mkdir -p "$rootfs/app/node_modules" "$rootfs/tmp" "$rootfs/usr/local/bin"
  # shellcheck disable=SC2086 # one package directory a word
  (cd "$nm" && tar -cf - $pkgs) | tar -C "$rootfs/app/node_modules" -xf -
  cp "$node_bin" "$rootfs/usr/local/bin/node"
  ldd "$node_bin" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }' | while read -r lib; do
    install -D -m 0755 "$(readlink -f "$lib")" "$rootfs$lib"
  done
  chown -R 0:0 "$rootfs"
  chown 65532:65532 "$rootfs/app"
  chmod 1777 "$rootfs/tmp"
  chmod 0755 "$rootfs" "$rootfs/app" "$rootfs/usr/local/bin/node"
  OCI_ROOTFS=$rootfs OCI_WORKDIR=/app OCI_ENV='["PATH=/usr/local/bin:/usr/bin:/bin","NODE_ENV=production"]' \
    bash "$root/hack/node/oci-archive.sh" "$out" "$ref" '["node"]' 65532
fi
echo "$out"
