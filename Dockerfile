# syntax=docker/dockerfile:1
# py-scheduler image: `docker build -t ghcr.io/py-scheduler/py-scheduler:0.1.0 .`
# Both stages use the same pinned base, so the venv built in the first one (its interpreter symlink,
# its ABI-tagged wheels) is valid as-is in the second. Pin a digest as well where builds must be
# reproducible: FROM python:3.11.16-slim-bookworm@sha256:...

FROM python:3.11.16-slim-bookworm AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
RUN python -m venv /opt/py-scheduler

# Only what the wheel needs (.dockerignore allow-lists the same paths).
COPY pyproject.toml README.md ./
COPY informers/ informers/
COPY scheduling_queue/ scheduling_queue/
COPY scheduler/ scheduler/

# A wheel rather than an editable install: the final stage gets site-packages, not a link to /src.
# Every dependency ships manylinux wheels, so no compiler is needed even here. The bytecode is
# compiled now because the container runs with a read-only root filesystem. pip goes last: the
# runtime venv needs no installer.
RUN /opt/py-scheduler/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/py-scheduler/bin/pip install --only-binary=:all: /wheels/*.whl \
 && /opt/py-scheduler/bin/python -m compileall -q /opt/py-scheduler/lib \
 && /opt/py-scheduler/bin/python -m pip uninstall --yes pip

FROM python:3.11.16-slim-bookworm

LABEL org.opencontainers.image.title="py-scheduler" \
      org.opencontainers.image.description="A secondary Kubernetes scheduler in Python" \
      org.opencontainers.image.licenses="Apache-2.0"

# A passwd entry for the non-root user, so tools that look up $HOME or the user name work; the base
# image's own pip and setuptools are removed, nothing in the runtime installs packages.
RUN groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nonroot \
 && python -m pip uninstall --yes --no-cache-dir pip setuptools wheel

COPY --from=builder /opt/py-scheduler /opt/py-scheduler

ENV PATH=/opt/py-scheduler/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["py-scheduler"]
