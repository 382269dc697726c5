# Two commands do all of the set-up on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PY_SCHEDULER_CACHE ?= $(HOME)/.cache/py-scheduler

.PHONY: all venv control-plane test test-unit test-integration lint demo cluster bench bench-queue bench-informers clean

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

test: venv control-plane
	$(PY) -m pytest -q -p no:cacheprovider tests

test-unit: venv
	$(PY) -m pytest -q -p no:cacheprovider tests/unit

test-integration: venv control-plane
	$(PY) -m pytest -q -p no:cacheprovider tests/integration

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/hadolint Dockerfile

demo: venv control-plane
	$(PY) -m devcluster.demo

cluster: venv control-plane
	$(PY) -m devcluster

bench: venv control-plane
	$(PY) -m bench.side_by_side
	$(PY) -m bench.explain_bench

bench-queue: venv
	$(PY) -m bench.queue_bench

bench-informers: venv control-plane
	$(PY) -m bench.informer_bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
