"""Shared fixtures. The control plane starts lazily: only tests that ask for it (integration) pay for it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, CoreV1Api

    from devcluster.cluster import ControlPlane
    from devcluster.py_scheduler import SchedulerProcess

INTEGRATION_DIR = Path(__file__).parent / "integration"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/integration is an integration test, marked or not."""
    for item in items:
        if INTEGRATION_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """One real etcd + kube-apiserver per session. Missing binaries are an error with the build hint."""
    from devcluster.cluster import ControlPlane

    # The beta gang API is served (issue 14): it only adds the scheduling.k8s.io/v1beta1 kinds and
    # keeps pods' spec.schedulingGroup, which no other test sets.
    plane = ControlPlane(workload_api=True)
    plane.start()  # BinariesMissingError / ControlPlaneError fail every test that needs the cluster
    try:
        yield plane
    finally:
        keep = request.session.testsfailed > 0
        plane.stop(keep_logs=keep)
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if keep and reporter is not None:
            reporter.write_line(f"devcluster: tests failed; control-plane logs kept in {plane.log_dir}")


@pytest.fixture(scope="session")
def controller_manager(control_plane: ControlPlane) -> ControlPlane:
    """The session's control plane with kube-controller-manager running (Deployments, PV binder...).

    The built-in host-path provisioner (``kubernetes.io/host-path``) is on for the whole session: it
    only acts on claims of a class naming it, and gives volume tests real dynamic provisioning."""
    control_plane.start_controller_manager(extra_args=["--enable-hostpath-provisioner=true"])
    return control_plane


@pytest.fixture
def run_id(core_v1: CoreV1Api) -> Iterator[str]:
    """A label value that ties a test's nodes and pods together; its nodes are deleted afterwards."""
    from tests.integration.workload import RUN_LABEL, new_run_id

    rid = new_run_id()
    yield rid
    api: Any = core_v1
    api.delete_collection_node(label_selector=f"{RUN_LABEL}={rid}", _preload_content=False)


@pytest.fixture(scope="session")
def kubeconfig(control_plane: ControlPlane) -> str:
    return str(control_plane.kubeconfig)


@pytest.fixture(scope="session")
def api_client(control_plane: ControlPlane) -> Iterator[ApiClient]:
    with control_plane.api_client() as client:
        yield client


@pytest.fixture(scope="session")
def core_v1(api_client: ApiClient) -> CoreV1Api:
    from kubernetes.client import CoreV1Api

    return CoreV1Api(api_client)


@pytest.fixture
def namespace(core_v1: CoreV1Api) -> Iterator[str]:
    """A fresh namespace, removed afterwards together with its pods.

    No namespace controller empties a deleted namespace here, so its workload controllers and pods go
    first (pods with grace period 0: no kubelet will ever confirm a graceful delete), then the
    namespace's finalizer is cleared.
    """
    name = f"t-{uuid.uuid4().hex[:10]}"
    api: Any = core_v1  # raw dict bodies; the client's stubs only admit model classes
    api.create_namespace(body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        yield name
    finally:
        _delete_namespace(api, name)


def _delete_namespace(core_v1: Any, name: str) -> None:
    from kubernetes.client import AppsV1Api, BatchV1Api
    from kubernetes.client.exceptions import ApiException

    # Controllers first (kube-controller-manager may be running): a ReplicaSet left behind would
    # recreate its pods after the namespace is gone, and later tests' schedulers would find them.
    apps, batch = AppsV1Api(core_v1.api_client), BatchV1Api(core_v1.api_client)
    for delete in (
        apps.delete_collection_namespaced_deployment,
        apps.delete_collection_namespaced_stateful_set,
        apps.delete_collection_namespaced_replica_set,
        batch.delete_collection_namespaced_job,
    ):
        delete(name, _preload_content=False)
    core_v1.delete_collection_namespaced_pod(name, grace_period_seconds=0, _preload_content=False)
    try:
        core_v1.delete_namespace(name, _preload_content=False)
        core_v1.replace_namespace_finalize(
            name,
            body={
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name},
                "spec": {"finalizers": []},
            },
            _preload_content=False,
        )
    except ApiException as err:
        if err.status != 404:
            raise


@pytest.fixture
def processes() -> Iterator[list[SchedulerProcess]]:
    """py-scheduler processes a test starts itself (append them); killed at the end, pass or fail."""
    started: list[SchedulerProcess] = []
    yield started
    for proc in started:
        proc.kill()
