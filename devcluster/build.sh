#!/usr/bin/env bash
# Builds a Kubernetes release's control plane from the Go module proxy into a cache outside the repo, one
# cache per release (~/.cache/py-scheduler/k8s-<version>). Each binary is built only when it is missing.
#   devcluster/build.sh            the pinned release (K8S_VERSION): kube-apiserver, kube-controller-manager,
#                                  kube-scheduler, kubectl and the etcd it pins, from gowrapper/
#   devcluster/build.sh v1.35.4    an older release of the support window (devcluster/COMPAT_VERSIONS):
#                                  kube-apiserver only, from gowrapper-<minor>/; its API server runs on the
#                                  pinned release's etcd (see docs/compatibility.md)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
pinned="$(cat "$here/K8S_VERSION")"
version="${1:-$pinned}"
cache="${PY_SCHEDULER_CACHE:-$HOME/.cache/py-scheduler}/k8s-$version"
if [ "$version" = "$pinned" ]; then
  wrapper="$here/gowrapper"
  bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd)
else
  minor="${version#v}"; minor="${minor%.*}"
  wrapper="$here/gowrapper-$minor"
  grep -qx "$version" "$here/COMPAT_VERSIONS" || { echo "devcluster: $version is neither K8S_VERSION nor in COMPAT_VERSIONS" >&2; exit 1; }
  grep -q "k8s.io/kubernetes $version" "$wrapper/go.mod" 2>/dev/null \
    || { echo "devcluster: $wrapper does not pin $version; run devcluster/gen_gowrapper.sh $version" >&2; exit 1; }
  bins=(kube-apiserver)
fi
missing=()
for b in "${bins[@]}"; do [ -x "$cache/$b" ] || missing+=("$b"); done
if [ "${#missing[@]}" = 0 ]; then
  echo "devcluster: binaries for $version cached in $cache"
  exit 0
fi
command -v go >/dev/null || { echo "devcluster: Go toolchain not found; install Go >= 1.26" >&2; exit 1; }
mkdir -p "$cache"
cd "$wrapper"
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
