"""The parity fuzzer's own parts that need no cluster: reading kube-scheduler's logged scores, comparing
them with py's, and the owner draws of bench.parity_extras."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from bench.parity_extras import Owner, add_owner, without_owner_spreading
from bench.parity_fuzz import KubeScores, PyVerdict, compare_scores

# Lines as kube-scheduler v1.37.2 writes them at --vmodule=schedule_one=10 (klog text format).
LOG = (
    'I1127 17:10:00.000001   42 schedule_one.go:984] "Plugin scored node for pod" pod="ns/p001" '
    'plugin="PodTopologySpread" node="n1" score=200\n'
    'I1127 17:10:00.000002   42 schedule_one.go:984] "Plugin scored node for pod" pod="ns/p001" '
    'plugin="PodTopologySpread" node="n2" score=0\n'
    'I1127 17:10:00.000003   42 schedule_one.go:1052] "Calculated node\'s final score for pod" pod="ns/p001" '
    'node="n1" score=300\n'
    'I1127 17:10:00.000004   42 schedule_one.go:1052] "Calculated node\'s final score for pod" pod="ns/p001" '
    'node="n2" score=150\n'
)


def test_kube_scores_reads_only_lines_written_after_it_started(tmp_path: Path) -> None:
    log = tmp_path / "kube-scheduler.log"
    log.write_text(LOG.replace("p001", "old"))
    scores = KubeScores(str(log))
    with log.open("a") as f:
        f.write(
            LOG
            + 'I1127 17:10:01.0 42 schedule_one.go:1052] "Calculated node\'s final score for pod" pod="ns/p0'
        )
    totals, plugins = scores.take("ns/p001")
    assert totals == {"n1": 300, "n2": 150}
    assert plugins == {"n1": {"PodTopologySpread": 200}, "n2": {"PodTopologySpread": 0}}
    assert scores.take("ns/old") == ({}, {})
    # Taken once: a later attempt's lines would not mix with this one's.
    assert scores.take("ns/p001") == ({}, {})
    # The half-written line is read once complete.
    with log.open("a") as f:
        f.write('02" node="n1" score=7\n')
    assert scores.take("ns/p002")[0] == {"n1": 7}


def test_compare_scores_names_the_plugins_that_differ() -> None:
    py = PyVerdict(["n1", "n2"], {"n1": 300, "n2": 250}, ["n1"])
    py.plugin_scores = {"n1": {"PodTopologySpread": 200}, "n2": {"PodTopologySpread": 100}}
    kube_plugins = {"n1": {"PodTopologySpread": 200}, "n2": {"PodTopologySpread": 0}}
    found = compare_scores(1, "ns/p001", py, {"n1": 300, "n2": 150}, kube_plugins)
    assert [m.kind for m in found] == ["score"]
    assert "n2: kube 150 py 250 (PodTopologySpread kube 0 py 100)" in found[0].detail
    assert not compare_scores(1, "ns/p001", py, {"n1": 300, "n2": 250}, kube_plugins)


def test_compare_scores_skips_a_single_feasible_node() -> None:
    # Neither scheduler scores when one node fits: kube logs nothing, py says 0.
    py = PyVerdict(["n1"], {"n1": 0}, ["n1"])
    assert not compare_scores(1, "ns/p", py, {}, {})


def _pod(namespace: str = "a") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": namespace, "labels": {"app": "web"}}, "spec": {}}


def test_owned_pods_reference_owners_of_their_own_namespace_only() -> None:
    owners = [
        Owner("a", "apps/v1", "ReplicaSet", "rs-a", "uid-a", {"app": "web"}),
        Owner("b", "apps/v1", "StatefulSet", "ss-b", "uid-b", {"app": "db"}),
    ]
    rng = random.Random(3)
    seen: set[tuple[str, str, Any]] = set()
    for _ in range(400):
        pod = _pod()
        add_owner(rng, pod, owners)
        for ref in pod["metadata"].get("ownerReferences", ()):
            assert ref["uid"] != "uid-b"  # owner references are namespace-local
            seen.add((ref["apiVersion"], ref["kind"], ref.get("controller")))
    # Every variant is drawn: the controller itself, a missing one of each kind, unknown kinds and
    # apiVersions, non-controller references.
    assert ("apps/v1", "ReplicaSet", True) in seen
    assert ("apps/v1", "StatefulSet", True) in seen
    assert ("v1", "ReplicationController", True) in seen
    assert ("apps/v1", "Deployment", True) in seen
    assert ("extensions/v1beta1", "ReplicaSet", True) in seen
    assert ("apps/v1", "ReplicaSet", False) in seen
    assert ("apps/v1", "ReplicaSet", None) in seen


def test_plain_pods_keep_only_references_that_do_not_spread_them() -> None:
    pod = _pod()
    pod["metadata"]["labels"]["role"] = "api"
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "1", "controller": False},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ss", "uid": "2", "controller": True},
    ]
    without_owner_spreading(pod)
    assert "role" not in pod["metadata"]["labels"]
    assert [r["name"] for r in pod["metadata"]["ownerReferences"]] == ["rs"]


def test_mirror_leaves_a_pod_it_already_holds_bound() -> None:
    # A held preemptor kube bound before the harness released its victims: the next listing brought
    # it in bound, and releasing it later must not assume it a second time.
    from bench.parity_fuzz import PyMirror
    from devcluster.nodes import make_node

    node = make_node("n1")
    node["metadata"]["resourceVersion"] = "1"
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "2"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
    }
    mirror = PyMirror({"nodes": [node], "pods": [pod]})
    mirror.assume(pod, "n1")
    cached = mirror.sim.cache.get_pod("ns/p")
    assert cached is not None and not mirror.sim.cache.is_assumed("ns/p")
