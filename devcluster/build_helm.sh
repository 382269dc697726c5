#!/usr/bin/env bash
# Builds the helm CLI at the pinned release (devcluster/HELM_VERSION) from the Go module proxy into
# $PY_SCHEDULER_CACHE/helm-<version>/helm, next to the control plane. Skipped when already built.
# `make lint` uses it for `helm lint` / `helm template` of deploy/helm/py-scheduler.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(cat "$here/HELM_VERSION")"
cache="${PY_SCHEDULER_CACHE:-$HOME/.cache/py-scheduler}/helm-$version"
if [ -x "$cache/helm" ]; then
  exit 0
fi
command -v go >/dev/null || { echo "helm: Go toolchain not found; install Go >= 1.26" >&2; exit 1; }
mkdir -p "$cache"
cd "$here/helmwrapper"
# Same stamping as helm's own Makefile, so `helm version` prints the real release.
pkg=helm.sh/helm/v4/internal/version
ldflags="-s -w -X $pkg.version=$version -X $pkg.metadata= -X $pkg.gitTreeState=clean"
start=$(date +%s)
echo "helm: building $version into $cache"
# Built under a temporary name and renamed, so an interrupted build never leaves a broken binary.
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$cache/.helm.tmp" helm.sh/helm/v4/cmd/helm
mv "$cache/.helm.tmp" "$cache/helm"
echo "helm: built in $(( $(date +%s) - start ))s"
"$cache/helm" version --short
