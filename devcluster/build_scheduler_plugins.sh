#!/usr/bin/env bash
# Builds the scheduler-plugins scheduler (sigs.k8s.io/scheduler-plugins cmd/scheduler: kube-scheduler with
# Coscheduling, CapacityScheduling... compiled in) and its controller (cmd/controller: PodGroup and
# ElasticQuota status) into a cache outside the repo, for the side-by-side tests and benches. Nothing in
# `make test` needs them. Each is skipped when cached.
#
# Version note: scheduler-plugins is built at exactly the release in SCHEDULER_PLUGINS_VERSION. Its go.mod pins the
# Kubernetes libraries at v0.34.7 / v1.34.7, but the module proxy this project builds from refuses
# several of those (k8s.io/dynamic-resource-allocation, csi-translation-lib, kubectl, ... @v0.34.7: 403
# "This module version is not available"), so schedpluginswrapper/go.mod carries its replace block with
# every v0.34.7 moved to the nearest patch release the proxy serves whole, v0.34.10 (k8s.io/kubernetes
# v1.34.10), and k8s.io/sample-apiserver (in the module graph only, not compiled) at v0.34.2.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(cat "$here/SCHEDULER_PLUGINS_VERSION")"
cache="${PY_SCHEDULER_CACHE:-$HOME/.cache/py-scheduler}/scheduler-plugins-$version"
bin="$cache/scheduler-plugins-scheduler"
controller="$cache/scheduler-plugins-controller"
if [ -x "$bin" ] && [ -x "$controller" ]; then
  echo "devcluster: scheduler-plugins $version scheduler and controller cached in $cache"
  exit 0
fi
command -v go >/dev/null || { echo "devcluster: Go toolchain not found; install Go >= 1.24" >&2; exit 1; }
mkdir -p "$cache"
cd "$here/schedpluginswrapper"
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=v1.34.10 -X $pkg.gitMajor=1 -X $pkg.gitMinor=34 -X $pkg.gitTreeState=clean"
start=$(date +%s)
echo "devcluster: building scheduler-plugins $version cmd/scheduler into $cache (cold build: several minutes)"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
# Built under a temporary name and renamed, so an interrupted build never leaves a broken binary.
if [ ! -x "$bin" ]; then
  go build -trimpath -ldflags "$ldflags" -o "$cache/.scheduler.tmp" sigs.k8s.io/scheduler-plugins/cmd/scheduler
  mv "$cache/.scheduler.tmp" "$bin"
fi
if [ ! -x "$controller" ]; then
  go build -trimpath -ldflags "$ldflags" -o "$cache/.controller.tmp" sigs.k8s.io/scheduler-plugins/cmd/controller
  mv "$cache/.controller.tmp" "$controller"
fi
echo "devcluster: built in $(( $(date +%s) - start ))s"
