# Two commands do all of the set-up on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PY_SCHEDULER_CACHE ?= $(HOME)/.cache/py-scheduler

.PHONY: all venv control-plane compat-control-planes peers test-peers test-compat helm image image-ci test test-unit test-integration lint demo cluster bench bench-queue bench-informers clean

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

# Three pytest sessions. The first runs everything that needs only the pinned release; meanwhile the
# older kube-apiservers of the support window and the peer schedulers (scheduler-plugins) build in the
# background at the lowest CPU priority, in the time the integration tests leave the cores idle (a cold
# machine saves most of their build time this way). Then the compatibility subset and the side-by-side
# tests against the peers run, side by side, each in a session of its own: their extra control planes
# live until their session ends, and sharing one session with the fault-injection tests made those time
# out. Most of both is waiting on control planes, so running them together saves the shorter one's time.
BACKGROUND_BUILD_LOG := $(PY_SCHEDULER_CACHE)/background-build.log
COMPAT_LOG := $(PY_SCHEDULER_CACHE)/compat-tests.log
# Held by whoever builds them in the background (.ci/run starts that build early, before the control
# plane): a second builder waits for the first and then finds everything cached.
BACKGROUND_BUILD_LOCK := $(PY_SCHEDULER_CACHE)/background-build.lock
test: venv control-plane helm
	@mkdir -p $(PY_SCHEDULER_CACHE) && rm -f $(BACKGROUND_BUILD_LOG).rc
	@echo "make test: building compat-control-planes and peers in the background (log: $(BACKGROUND_BUILD_LOG))"
	@( nice -n 19 flock $(BACKGROUND_BUILD_LOCK) $(MAKE) --no-print-directory compat-control-planes peers >$(BACKGROUND_BUILD_LOG) 2>&1; \
	   echo $$? >$(BACKGROUND_BUILD_LOG).rc ) & \
	$(PY) -m pytest -q -p no:cacheprovider tests --ignore=tests/integration/compat --ignore=tests/integration/peers; \
	rc=$$?; wait; \
	if [ "$$(cat $(BACKGROUND_BUILD_LOG).rc 2>/dev/null)" != 0 ]; then cat $(BACKGROUND_BUILD_LOG); echo "make test: background build failed"; exit 1; fi; \
	tail -n 3 $(BACKGROUND_BUILD_LOG); exit $$rc
	@echo "make test: the compatibility subset (log: $(COMPAT_LOG)) beside the side-by-side tests"
	@$(PY) -m pytest -q -p no:cacheprovider tests/integration/compat >$(COMPAT_LOG) 2>&1 & compat=$$!; \
	$(PY) -m pytest -q -p no:cacheprovider tests/integration/peers; peers=$$?; \
	wait $$compat; compat_rc=$$?; echo "--- compatibility subset:"; cat $(COMPAT_LOG); \
	[ $$peers = 0 ] && [ $$compat_rc = 0 ]

# The scheduler-plugins scheduler and controller (devcluster/SCHEDULER_PLUGINS_VERSION), the peer of the
# side-by-side tests of its policies (tests/integration/peers), and the Prometheus server
# (devcluster/PROMETHEUS_VERSION) that feeds both sides of the load-aware ones, built the same way.
peers:
	bash devcluster/build_scheduler_plugins.sh
	bash devcluster/build_prometheus.sh

# The side-by-side tests against scheduler-plugins alone, building what they need.
test-peers: venv control-plane peers
	$(PY) -m pytest -q -p no:cacheprovider tests/integration/peers

# The compatibility subset alone (tests/integration/compat), against every release of COMPAT_VERSIONS.
test-compat: venv control-plane compat-control-planes
	$(PY) -m pytest -q -p no:cacheprovider tests/integration/compat

test-unit: venv helm
	$(PY) -m pytest -q -p no:cacheprovider tests/unit

test-integration: venv control-plane compat-control-planes peers helm
	$(PY) -m pytest -q -p no:cacheprovider tests/integration --ignore=tests/integration/compat --ignore=tests/integration/peers
	$(PY) -m pytest -q -p no:cacheprovider tests/integration/compat
	$(PY) -m pytest -q -p no:cacheprovider tests/integration/peers

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
