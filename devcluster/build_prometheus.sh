#!/usr/bin/env bash
# Builds the Prometheus server (github.com/prometheus/prometheus cmd/prometheus) at the pinned release
# (devcluster/PROMETHEUS_VERSION; module version v0.3xx.y is Prometheus 3.xx.y) from the Go module proxy
# into $PY_SCHEDULER_CACHE/prometheus-<version>/prometheus, for the load-aware (Trimaran) side-by-side
# tests and bench. Skipped when already built. Built without the `builtinassets` tag: the web UI's
# compiled React assets are not embedded (they are not in the module), which the query API and
# scraping do not need. Built with `remove_all_sd` (Prometheus' own build tag): only static and file
# service discovery, which is what the tests configure, and a far shorter cold build than with every
# cloud provider's SDK.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(cat "$here/PROMETHEUS_VERSION")"
cache="${PY_SCHEDULER_CACHE:-$HOME/.cache/py-scheduler}/prometheus-$version"
if [ -x "$cache/prometheus" ]; then
  exit 0
fi
command -v go >/dev/null || { echo "prometheus: Go toolchain not found; install Go >= 1.26" >&2; exit 1; }
mkdir -p "$cache"
cd "$here/promwrapper"
# Same stamping as Prometheus' promu build, so `prometheus --version` prints the release.
pkg=github.com/prometheus/common/version
minor="${version#v0.}"; minor="${minor%%.*}"
release="$(( minor / 100 )).$(( minor % 100 )).${version##*.}"
ldflags="-s -w -X $pkg.Version=$release -X $pkg.Branch=HEAD -X $pkg.BuildUser=py-scheduler -X $pkg.Revision=$version"
start=$(date +%s)
echo "prometheus: building $version into $cache (cold build: several minutes)"
# Built under a temporary name and renamed, so an interrupted build never leaves a broken binary.
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -tags remove_all_sd -ldflags "$ldflags" -o "$cache/.prometheus.tmp" \
  github.com/prometheus/prometheus/cmd/prometheus
mv "$cache/.prometheus.tmp" "$cache/prometheus"
echo "prometheus: built in $(( $(date +%s) - start ))s"
"$cache/prometheus" --version | head -1
