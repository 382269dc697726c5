"""The compatibility subset: the same py-scheduler against the kube-apiserver of each older
release of the support window (devcluster/COMPAT_VERSIONS), on the pinned release's etcd.

``control_plane`` is parametrized over those releases, so every test here runs once per release. The
session's ``controller_manager`` is the pinned release's (newer than these API servers: a test harness
for Deployments, the PV binder and claims from templates, not a supported skew)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devcluster.binaries import compat_versions
from devcluster.cluster import ControlPlane


@pytest.fixture(scope="session", params=compat_versions())
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    # Each release's own gang API is served (v1.35 v1alpha1, v1.36 v1alpha2), as on a cluster that
    # turned it on: py-scheduler must refuse it by name, never read it as no gang.
    plane = ControlPlane(release=request.param, workload_api=True)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop(keep_logs=request.session.testsfailed > 0)
