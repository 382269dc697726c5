#!/usr/bin/env bash
# Builds the py-scheduler container image.
#
#   devcluster/image.sh build   `make image`: docker when its engine answers, else podman; the
#                               Dockerfile's default (public) base image. IMAGE names the tag.
#   devcluster/image.sh ci      `make image-ci` and the image test: podman from Debian's packages
#                               (installed if missing) on a Debian bookworm + python3 base that
#                               mmdebstrap makes from Debian's packages, because no container
#                               registry is reachable here. Prints the image ID last: other
#                               checkouts on the machine share podman's storage and may retag.
#   devcluster/image.sh ci-plugin DIR IMAGE_ID
#                               the plugin package DIR's image (examples/plugin-template) FROM the
#                               image IMAGE_ID that `ci` printed, its build stage on the same base.
#
# The ci base is a tarball cached under $PY_SCHEDULER_CACHE/image, keyed by its recipe, and imported
# into podman's storage when that storage lacks it (storage may be gone on a fresh machine while the
# cache survives, or the reverse). Idempotent; a second run reuses podman's layer cache.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${PY_SCHEDULER_CACHE:-$HOME/.cache/py-scheduler}/image"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$REPO/pyproject.toml" | head -n1)"

log() { printf 'image.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# ----- the CI base: Debian bookworm, python3 and its venv module, nothing to compile with -----
BASE_SUITE=bookworm
BASE_PACKAGES=python3,python3-venv,ca-certificates
# Merged /usr set up by symlinks: otherwise bookworm's init-system-helpers pulls usrmerge, and perl.
BASE_HOOKS=(/usr/share/mmdebstrap/hooks/merged-usr)
BASE_DPKG_OPTS=(
  'force-unsafe-io'
  'path-exclude=/usr/share/man/*'
  'path-exclude=/usr/share/doc/*'
  'path-include=/usr/share/doc/*/copyright'
  'path-exclude=/usr/share/locale/*'
  'path-exclude=/usr/share/info/*'
)
BASE_KEY="$(printf '%s\n' "$BASE_SUITE" "$BASE_PACKAGES" "${BASE_HOOKS[@]}" "${BASE_DPKG_OPTS[@]}" | sha256sum | cut -c1-12)"
BASE_TAR="$CACHE/base-$BASE_SUITE-python3-$BASE_KEY.tar"
BASE_REF="localhost/py-scheduler-base:$BASE_SUITE-$BASE_KEY"
# One tag per checkout, so parallel checkouts on one machine don't retag each other's builds.
CI_IMAGE="${IMAGE:-localhost/py-scheduler:ci-$(printf '%s' "$REPO" | sha256sum | cut -c1-8)}"

# podman 4.3 on these machines: crun refuses the hybrid cgroup layout, runc works with cgroupfs.
podman_() { podman --runtime runc --cgroup-manager cgroupfs "$@"; }

# Containers need explicit rlimits below the host's hard limits: podman's defaults exceed them here,
# and so did nproc=65536 under a hard limit of 96365 (runc: "error setting rlimit type 6").
ULIMIT_CAP=16384
ulimit_args() {
  local nofile nproc
  nofile="$(ulimit -Hn)"; nproc="$(ulimit -Hu)"
  [[ "$nofile" == unlimited || "$nofile" -gt $ULIMIT_CAP ]] && nofile=$ULIMIT_CAP
  [[ "$nproc" == unlimited || "$nproc" -gt $ULIMIT_CAP ]] && nproc=$ULIMIT_CAP
  printf '%s\n' "--ulimit=nofile=$nofile:$nofile" "--ulimit=nproc=$nproc:$nproc"
}

ensure_tools() {
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  command -v runc >/dev/null || missing+=(runc)
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  ((${#missing[@]} == 0)) && return 0
  command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them with"
  [[ "$(id -u)" == 0 ]] || die "missing ${missing[*]}: install them (apt-get install ${missing[*]}) or run as root"
  log "installing ${missing[*]} from Debian's packages"
  # Another checkout's install may hold dpkg's lock for a while: wait for it rather than fail.
  apt-get -o DPkg::Lock::Timeout=300 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
    --no-install-recommends "${missing[@]}" >&2
}

# The host's own Debian sources (only those for the base's suite), so the chroot uses the same mirror.
apt_sources() {
  local file
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -s "$file" ]] && grep -qE "^[^#]*\b$BASE_SUITE\b" "$file" && printf '%s\n' "$file"
  done
  return 0
}

ensure_base() {
  if podman_ image exists "$BASE_REF"; then
    return 0
  fi
  if [[ ! -s "$BASE_TAR" ]]; then
    local sources=() opts=() opt started
    mapfile -t sources < <(apt_sources)
    ((${#sources[@]})) || die "no apt sources for $BASE_SUITE in /etc/apt to build the base image from"
    for opt in "${BASE_HOOKS[@]}"; do opts+=("--hook-dir=$opt"); done
    for opt in "${BASE_DPKG_OPTS[@]}"; do opts+=("--dpkgopt=$opt"); done
    log "building the base image rootfs with mmdebstrap into $BASE_TAR"
    started=$SECONDS
    mmdebstrap --quiet --mode=root --format=tar --variant=minbase --include="$BASE_PACKAGES" "${opts[@]}" \
      "$BASE_SUITE" "$BASE_TAR.partial" "${sources[@]}" >&2
    mv "$BASE_TAR.partial" "$BASE_TAR"
    log "base rootfs built in $((SECONDS - started))s"
  fi
  log "importing $BASE_TAR as $BASE_REF"
  podman_ import --quiet "$BASE_TAR" "$BASE_REF" >/dev/null
}

# pip in a build trusts what the host trusts: a TLS-inspecting egress proxy's CA is in the host's
# bundle, not in pip's own. Mounted for the RUN steps only, so nothing of it reaches a layer.
trust_args() {
  local host_ca=/etc/ssl/certs/ca-certificates.crt
  if [[ -s "$host_ca" ]]; then
    printf '[global]\ncert = /run/host-ca.crt\n' >"$CACHE/pip.conf"
    printf '%s\n' --volume "$host_ca:/run/host-ca.crt:ro" --volume "$CACHE/pip.conf:/etc/pip.conf:ro"
  fi
}

ci() {
  ensure_tools
  mkdir -p "$CACHE"
  # Several checkouts on one machine share the cache and podman's storage: one build at a time.
  exec 9>"$CACHE/.lock"
  flock 9
  ensure_base
  local started=$SECONDS ulimits trust
  mapfile -t ulimits < <(ulimit_args)
  mapfile -t trust < <(trust_args)
  log "building $CI_IMAGE on $BASE_REF"
  # Host network: the build only needs to reach the package index, and no bridge/iptables setup
  # is required of the machine.
  local id
  id="$(podman_ build --quiet --network host "${ulimits[@]}" "${trust[@]}" \
    --build-arg "BASE_IMAGE=$BASE_REF" --tag "$CI_IMAGE" --file "$REPO/Dockerfile" "$REPO" | tail -n1)"
  log "built $CI_IMAGE ($id) in $((SECONDS - started))s, $(podman_ image inspect --format '{{.Size}}' "$id") bytes"
  printf '%s\n' "$id"
}

# A plugin package's image (examples/plugin-template's Dockerfile) FROM a py-scheduler image built by
# `ci` (its ID: other checkouts may retag), its Python build stage on the same CI base. Prints the ID.
ci_plugin() {
  local context="$1" from="$2"
  [[ -f "$context/Dockerfile" ]] || die "no Dockerfile in $context"
  ensure_tools
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  flock 9
  ensure_base
  local started=$SECONDS ulimits trust id
  local tag="localhost/py-scheduler-plugin:ci-$(printf '%s' "$(cd "$context" && pwd)" | sha256sum | cut -c1-8)"
  mapfile -t ulimits < <(ulimit_args)
  mapfile -t trust < <(trust_args)
  log "building $tag from $context on $from"
  id="$(podman_ build --quiet --network host "${ulimits[@]}" "${trust[@]}" \
    --build-arg "PY_SCHEDULER_IMAGE=$from" --build-arg "BUILD_IMAGE=$BASE_REF" \
    --tag "$tag" --file "$context/Dockerfile" "$context" | tail -n1)"
  log "built $tag ($id) in $((SECONDS - started))s, $(podman_ image inspect --format '{{.Size}}' "$id") bytes"
  printf '%s\n' "$id"
}

build() {
  local engine="${CONTAINER_ENGINE:-}" image="${IMAGE:-ghcr.io/py-scheduler/py-scheduler:$VERSION}"
  if [[ -z "$engine" ]]; then
    if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
      engine=docker
    elif command -v podman >/dev/null; then
      engine=podman
    else
      die "neither a running docker engine nor podman found; install one (CI uses: devcluster/image.sh ci)"
    fi
  fi
  local args=(build --tag "$image" --file "$REPO/Dockerfile")
  [[ -n "${BASE_IMAGE:-}" ]] && args+=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
  log "building $image with $engine"
  "$engine" "${args[@]}" "$REPO" >&2
  printf '%s\n' "$image"
}

case "${1:-}" in
  build) build ;;
  ci) ci ;;
  ci-plugin) ci_plugin "${2:?ci-plugin DIR IMAGE_ID}" "${3:?ci-plugin DIR IMAGE_ID}" ;;
  *) die "usage: $0 build|ci|ci-plugin DIR IMAGE_ID" ;;
esac
