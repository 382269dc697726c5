# syntax=docker/dockerfile:1
# py-scheduler image: `make image` (docker or podman), or by hand:
#   docker build -t ghcr.io/py-scheduler/py-scheduler:0.1.0 .
# The builder makes the venv on the base, then assembles a root filesystem of only what runs (the
# interpreter, the stdlib parts, the linked libraries, the venv) that the final stage, FROM scratch,
# copies: every path as it was in the builder, so the venv's interpreter link stays valid. BASE_IMAGE
# is only overridden where the public image cannot be pulled: CI builds on a Debian bookworm + python3 base it makes itself
# (devcluster/image.sh). Pin a digest as well where builds must be reproducible:
#   --build-arg BASE_IMAGE=python:3.11.16-slim-bookworm@sha256:...
ARG BASE_IMAGE=python:3.11.16-slim-bookworm

FROM ${BASE_IMAGE} AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
RUN python3 -m venv /opt/py-scheduler

# The dependencies get their own layer, rebuilt only when pyproject.toml changes: a source edit
# rebuilds the small wheel below, not numpy and aiohttp. Every dependency ships manylinux wheels
# (--only-binary), so no compiler is needed even here. kubernetes.aio is a second, asyncio copy of
# the generated client (68 MB, a fifth of the image) that py-scheduler never imports: its watches
# use aiohttp directly. The bytecode is compiled now because the container runs with a read-only
# root filesystem.
COPY pyproject.toml ./
RUN python3 -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"], sep="\n")' \
      > /tmp/requirements.txt \
 && /opt/py-scheduler/bin/pip install --only-binary=:all: -r /tmp/requirements.txt \
 && rm -rf /opt/py-scheduler/lib/python3*/site-packages/kubernetes/aio \
 && /opt/py-scheduler/bin/python -m compileall -q /opt/py-scheduler/lib

# Only what the wheel needs (.dockerignore allow-lists the same paths).
COPY README.md ./
COPY informers/ informers/
COPY scheduling_queue/ scheduling_queue/
COPY scheduler/ scheduler/

# A wheel rather than an editable install: the final stage gets site-packages, not a link to /src.
# pip goes last: the runtime venv needs no installer.
RUN /opt/py-scheduler/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/py-scheduler/bin/pip install --no-deps /wheels/*.whl \
 && /opt/py-scheduler/bin/python -m compileall -q /opt/py-scheduler/lib \
 && /opt/py-scheduler/bin/python -m pip uninstall --yes pip setuptools

# The runtime root filesystem, assembled from this stage (devcluster/image_rootfs.py): the interpreter,
# its standard library without tests, IDLE, tkinter, ensurepip and the like, the shared libraries that it
# and every extension module link (as ldd resolves them here), the venv without the wheels' test suites,
# the CA bundle, passwd and group. No shell, no package manager, no pip.
COPY devcluster/image_rootfs.py /tmp/image_rootfs.py
RUN python3 /tmp/image_rootfs.py /rootfs /opt/py-scheduler

FROM scratch

LABEL org.opencontainers.image.title="py-scheduler" \
      org.opencontainers.image.description="A secondary Kubernetes scheduler in Python" \
      org.opencontainers.image.licenses="Apache-2.0"

COPY --from=builder /rootfs /

ENV PATH=/opt/py-scheduler/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["py-scheduler"]
