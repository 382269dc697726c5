#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd at the pinned release
# from the Go module proxy into a cache outside the repo. Each binary is built only when it is missing, so
# adding a component to the list costs one build, not a rebuild of the rest.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(cat "$here/K8S_VERSION")"
cache="${PY_SCHEDULER_CACHE:-$HOME/.cache/py-scheduler}/k8s-$version"
bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd)
missing=()
for b in "${bins[@]}"; do [ -x "$cache/$b" ] || missing+=("$b"); done
if [ "${#missing[@]}" = 0 ]; then
  echo "devcluster: binaries for $version cached in $cache"
  exit 0
fi
command -v go >/dev/null || { echo "devcluster: Go toolchain not found; install Go >= 1.26" >&2; exit 1; }
mkdir -p "$cache"
cd "$here/gowrapper"
# Same stamping as hack/lib/version.sh, so `kube-apiserver --version` prints the real release.
pkg=k8s.io/component-base/version
minor="${version#v*.}"; minor="${minor%%.*}"
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
ldflags="$ldflags -X k8s.io/client-go/pkg/version.gitVersion=$version -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
start=$(date +%s)
echo "devcluster: building ${missing[*]} ($version) into $cache (cold build: several minutes)"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
for b in "${missing[@]}"; do
  if [ "$b" = etcd ]; then
    pkgpath=./cmd/etcd; flags="-s -w"
  else
    pkgpath="k8s.io/kubernetes/cmd/$b"; flags="$ldflags"
  fi
  # Built under a temporary name and renamed, so an interrupted build never leaves a broken binary.
  go build -trimpath -ldflags "$flags" -o "$cache/.$b.tmp" "$pkgpath"
  mv "$cache/.$b.tmp" "$cache/$b"
done
echo "devcluster: built in $(( $(date +%s) - start ))s"
"$cache/kube-apiserver" --version
