#!/usr/bin/env bash
# Go tests of our Caddy modules (proxy/: routetable, mirror, santls, listener, validate), part of
# `npm test`. With the race detector when cgo works (a C compiler on PATH), without otherwise.
set -euo pipefail
cd "$(dirname "$0")/../proxy"
if command -v "$(go env CC)" >/dev/null 2>&1; then
  exec env CGO_ENABLED=1 go test -race -count=1 ./...
fi
echo "test:proxy: no C compiler ($(go env CC)): running without -race" >&2
exec env CGO_ENABLED=0 go test -count=1 ./...
