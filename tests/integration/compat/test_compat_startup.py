"""What an older API server cannot give py-scheduler is refused by name, per release: a configured
feature whose API is not served stops start-up with one line; a pod using that release's own gang field
is refused, never scheduled as if it were alone."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import yaml

from devcluster.binaries import minor_of
from devcluster.nodes import create_nodes, make_node
from devcluster.py_scheduler import REPO, SchedulerProcess, scheduler_config, wait_for
from scheduler.client.kubeclient import RestClient, load_configuration
from tests.integration.test_constraints import _failed_message
from tests.integration.workload import RUN_LABEL, make_pod


def _start_up(tmp_path: Path, kubeconfig: str, *flags: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(scheduler_config()))
    argv = [sys.executable, "-m", "scheduler", "--config", str(config), "--kubeconfig", kubeconfig,
            "--bind-address", "127.0.0.1", "--port", "0", *flags]  # fmt: skip
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60, check=False)


def test_the_gang_gate_stops_start_up_naming_the_api_and_the_server_version(
    tmp_path: Path, kubeconfig: str, control_plane: Any
) -> None:
    result = _start_up(tmp_path, kubeconfig, "--feature-gates=GenericWorkload=true")
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if re.match(r"\S+ E ", line)]
    assert len(errors) == 1, result.stderr
    line = errors[0]
    assert "GenericWorkload" in line and "scheduling.k8s.io/v1beta1 podgroups" in line, line
    assert f"API server ({control_plane.version})" in line, line
    if minor_of(control_plane.version) == 36:
        # v1.36 serves its own PodGroups at v1alpha2: the line says so.
        assert "it serves podgroups only at v1alpha2" in line, line


def test_the_releases_gang_field_is_refused_by_name(
    api_client: Any, core_v1: Any, namespace: str, run_id: str, tmp_path: Path, kubeconfig: str,
    control_plane: Any,
) -> None:  # fmt: skip
    create_nodes(api_client, [make_node(f"n-{run_id}-0", cpu="4", labels={RUN_LABEL: run_id})])
    pod = make_pod("member", run_id)
    if minor_of(control_plane.version) == 35:
        pod["spec"]["workloadRef"] = {"name": "w", "podGroup": "g"}
        expected = "workloadRef (the scheduling.k8s.io/v1alpha1 gang API of Kubernetes v1.35)"
    else:
        pod["spec"]["schedulingGroup"] = {"podGroupName": "g"}
        expected = "pod uses schedulingGroup"
    # Raw POST: the Python client's models know no v1.35-only field.
    rest = RestClient(load_configuration(kubeconfig))
    status, body = rest.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    assert status == 201, body
    # The API server keeps the field (its gang API is on), so the pod really carries it.
    created = orjson.loads(body)["spec"]
    assert created.get("workloadRef") or created.get("schedulingGroup"), created
    proc = SchedulerProcess(kubeconfig, tmp_path).start()
    try:
        message = wait_for(lambda: _failed_message(core_v1, namespace, "member"), 30, "FailedScheduling")
        assert expected in message, message
        fresh = core_v1.read_namespaced_pod("member", namespace)
        assert not fresh.spec.node_name
    finally:
        proc.stop()
