# Two commands do all of the set-up on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PY_SCHEDULER_CACHE ?= $(HOME)/.cache/py-scheduler

.PHONY: all venv control-plane compat-control-planes test-compat helm image image-ci test test-unit test-integration lint demo cluster bench bench-queue bench-informers clean

all: test

$(STAMP): pyproject.toml
	@command -v openssl >/dev/null || (apt-get update && apt-get install -y --no-install-recommends openssl)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# Built from the Go module proxy into $(PY_SCHEDULER_CACHE); skipped when cached.
control-plane:
	bash devcluster/build.sh

# The kube-apiserver of each older release of the support window (devcluster/COMPAT_VERSIONS), one cache
# per release, each built only when missing; they run on the pinned release's etcd.
compat-control-planes:
	for v in $$(cat devcluster/COMPAT_VERSIONS); do bash devcluster/build.sh $$v || exit 1; done

# The helm CLI (devcluster/HELM_VERSION), built the same way; `make lint` and the chart tests use it.
HELM := $(PY_SCHEDULER_CACHE)/helm-$(shell cat devcluster/HELM_VERSION)/helm
CHART := deploy/helm/py-scheduler
helm:
	bash devcluster/build_helm.sh

# The container image: docker or podman, the public base (IMAGE=... to retag). image-ci is what the
# image test builds: podman and a Debian base made by mmdebstrap, cached in $(PY_SCHEDULER_CACHE).
image:
	bash devcluster/image.sh build

image-ci:
	bash devcluster/image.sh ci

# The compatibility subset runs in a pytest session of its own: its older control planes live until
# their session ends, and sharing one session with the rest made the fault-injection tests time out.
test: venv control-plane compat-control-planes helm
	$(PY) -m pytest -q -p no:cacheprovider tests --ignore=tests/integration/compat
	$(PY) -m pytest -q -p no:cacheprovider tests/integration/compat

# The compatibility subset alone (tests/integration/compat), against every release of COMPAT_VERSIONS.
test-compat: venv control-plane compat-control-planes
	$(PY) -m pytest -q -p no:cacheprovider tests/integration/compat

test-unit: venv helm
	$(PY) -m pytest -q -p no:cacheprovider tests/unit

test-integration: venv control-plane compat-control-planes helm
	$(PY) -m pytest -q -p no:cacheprovider tests/integration --ignore=tests/integration/compat
	$(PY) -m pytest -q -p no:cacheprovider tests/integration/compat

lint: venv helm
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/hadolint Dockerfile
	$(HELM) lint --strict $(CHART)
	$(HELM) lint --strict $(CHART) -f $(CHART)/ci/all-values.yaml
	$(HELM) template py-scheduler $(CHART) -n py-scheduler >/dev/null
	$(HELM) template py-scheduler $(CHART) -n py-scheduler -f $(CHART)/ci/all-values.yaml >/dev/null

demo: venv control-plane
	$(PY) -m devcluster.demo

cluster: venv control-plane
	$(PY) -m devcluster

bench: venv control-plane
	-$(PY) -m pip install --quiet -e '.[bench]' || echo "matplotlib not installed: the report's pictures will be skipped"
	$(PY) -m bench.side_by_side
	$(PY) -m bench.explain_bench
	$(PY) -m bench.quota_bench
	$(PY) -m bench.load_aware_bench

bench-queue: venv
	$(PY) -m bench.queue_bench

bench-informers: venv control-plane
	$(PY) -m bench.informer_bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
