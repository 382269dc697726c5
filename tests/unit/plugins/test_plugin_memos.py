"""What the volume and DRA plugins keep between cycles (issue 19) is recomputed exactly when its inputs
change: a cached answer must always equal a fresh plugin's."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from scheduler.framework import (
    CSI_NODES,
    DEVICE_CLASSES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    VOLUME_ATTACHMENTS,
    Code,
    CycleState,
    NodeInfo,
    PodInfo,
    Status,
)
from scheduler.framework.listers import REPLICA_SETS, SERVICES, StaticLister
from scheduler.plugins.dynamicresources import DynamicResources
from scheduler.plugins.dynamicresources.cel import CelCache, CelError, device_activation, driver_equality
from scheduler.plugins.dynamicresources.claims import (
    AllocatedDevicesMemo,
    InFlightClaims,
    all_allocated_devices,
)
from scheduler.plugins.interpodaffinity.terms import pod_affinity_terms
from scheduler.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.plugins.volumebinding import VolumeBinding
from scheduler.plugins.volumebinding.binder import ERR_REASON_NODE_CONFLICT, ERR_REASON_PV_NOT_EXIST
from tests.unit.plugins.dra_testlib import (
    CLASS_A,
    DRIVER_A,
    REQ_0,
    allocation,
    claim,
    device,
    device_class,
    request,
    result,
    slice_,
)
from tests.unit.plugins.plugin_testlib import FakeHandle, FakeSnapshot, node
from tests.unit.plugins.volume_testlib import handle, pod_with_claims, pv, pvc

DRIVER = "ebs.csi.aws.com"


def _code(status: Status | None) -> tuple[Code, list[str]] | None:
    return None if status is None else (status.code, status.reasons)


# --- NodeVolumeLimits: per-node attached volumes ----------------------------------------------------


def _csi_node(name: str, limit: int) -> dict[str, Any]:
    driver = {"name": DRIVER, "nodeID": name, "allocatable": {"count": limit}}
    return {"metadata": {"name": name, "resourceVersion": str(limit)}, "spec": {"drivers": [driver]}}


def _holder(name: str, claim_name: str) -> PodInfo:
    raw = pod_with_claims(name, claim_name, uid=f"uid-{name}").pod
    raw["spec"]["nodeName"] = "n"
    return PodInfo(raw)


def _limits(fh: FakeHandle, info: NodeInfo, target: PodInfo, plugin: NodeVolumeLimits) -> Any:
    state = CycleState()
    plugin.pre_filter(state, target, (info,))
    return _code(plugin.filter(state, target, info))


def test_volume_limits_follow_every_input_of_the_cached_node_answer() -> None:
    """One plugin keeps its per-node answer across cycles; after each change it must agree with a
    fresh plugin over the same listers."""
    pvs = tuple(pv(f"pv-{i}", "", csi=(DRIVER, f"vol-{i}")) for i in range(4))
    pvcs = tuple(pvc(f"c-{i}", "", volume_name=f"pv-{i}") for i in range(3))
    fh = handle(pvs=pvs, pvcs=pvcs, csi_nodes=(_csi_node("n", 2),))
    cached = NodeVolumeLimits({}, fh)
    info = NodeInfo(node("n"))
    info.add_pod(_holder("a", "c-0"))
    target = pod_with_claims("t", "c-2")

    def check(want: Any) -> None:
        assert _limits(fh, info, target, cached) == want
        assert _limits(fh, info, target, NodeVolumeLimits({}, fh)) == want

    exceeded = (Code.Unschedulable, [ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED])
    check(None)  # 1 attached + 1 new <= 2
    info.add_pod(_holder("b", "c-1"))
    check(exceeded)  # a new pod on the node
    preempted = info.clone()
    preempted.remove_pod(next(iter(info.pods)))
    assert _limits(fh, preempted, target, cached) is None  # a what-if node without one of them
    check(exceeded)
    csi = fh.listers[CSI_NODES]
    csi.add(_csi_node("n", 3))
    check(None)  # a new CSINode
    csi.add(_csi_node("n", 2))
    check(exceeded)
    # The claim of "b" now names a volume without CSI: it no longer counts.
    claims = fh.listers[PERSISTENT_VOLUME_CLAIMS]
    claims.add(pvc("c-1", "", volume_name="pv-missing"))
    check(None)
    # ... and a volume of that name appears, sharing the handle of "a"'s volume: counted once.
    fh.listers[PERSISTENT_VOLUMES].add(pv("pv-missing", "", csi=(DRIVER, "vol-0")))
    check(None)
    claims.add(pvc("c-1", "", volume_name="pv-1"))
    check(exceeded)


def test_volume_limits_without_listers_versions_recompute() -> None:
    """Listers that keep no version: nothing is cached, answers stay right."""
    pvs = (pv("pv-0", "", csi=(DRIVER, "vol-0")), pv("pv-1", "", csi=(DRIVER, "vol-1")))
    fh = handle(pvs=pvs, pvcs=(pvc("c-0", "", volume_name="pv-0"), pvc("c-1", "", volume_name="pv-1")))

    class Unversioned:
        def __init__(self, inner: StaticLister) -> None:
            self.inner = inner

        def list(self, namespace: str | None = None) -> Any:
            return self.inner.list(namespace)

        def get(self, name: str, namespace: str = "") -> Any:
            return self.inner.get(name, namespace)

    fh.listers = {spec: Unversioned(lister) for spec, lister in fh.listers.items()}  # type: ignore[misc]
    fh.listers[CSI_NODES] = Unversioned(StaticLister([_csi_node("n", 1)]))  # type: ignore[assignment]
    plugin = NodeVolumeLimits({}, fh)
    info = NodeInfo(node("n"))
    target = pod_with_claims("t", "c-1")
    assert _limits(fh, info, target, plugin) is None
    info.add_pod(_holder("a", "c-0"))
    assert _limits(fh, info, target, plugin) == (Code.Unschedulable, [ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED])
    assert plugin._by_node == {}


def test_a_volume_attachment_change_refreshes_only_the_nodes_it_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nodes n and m allow 1 volume each. A VolumeAttachment added, moved, changed or deleted recomputes
    the count of the node(s) it names (before and after an update) and leaves the others' cached; every
    answer agrees with a fresh plugin over the same listers."""
    pvs = tuple(pv(f"pv-{i}", "", csi=(DRIVER, f"vol-{i}")) for i in range(3))
    pvcs = tuple(pvc(f"c-{i}", "", volume_name=f"pv-{i}") for i in range(3))
    fh = handle(pvs=pvs, pvcs=pvcs, csi_nodes=(_csi_node("n", 1), _csi_node("m", 1)))
    cached = NodeVolumeLimits({}, fh)
    infos = {name: NodeInfo(node(name)) for name in ("n", "m")}
    target = pod_with_claims("t", "c-2")
    computed: list[str] = []
    real = NodeVolumeLimits._attached_by_va

    def counting(self: NodeVolumeLimits, node_name: str) -> dict[str, str]:
        if self is cached:
            computed.append(node_name)
        return real(self, node_name)

    monkeypatch.setattr(NodeVolumeLimits, "_attached_by_va", counting)
    exceeded = (Code.Unschedulable, [ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED])

    def verdicts() -> dict[str, Any]:
        """Each node's verdict for the target (one cycle), checked against a fresh plugin."""
        computed.clear()
        fresh = NodeVolumeLimits({}, fh)
        got = {}
        for name, info in infos.items():
            got[name] = _limits(fh, info, target, cached)
            assert got[name] == _limits(fh, info, target, fresh), name
        return got

    def attachment(node_name: str, attached: bool | None = None) -> dict[str, Any]:
        source = {"persistentVolumeName": "pv-0"}
        va = {
            "metadata": {"name": "va-0"},
            "spec": {"attacher": DRIVER, "nodeName": node_name, "source": source},
        }
        if attached is not None:
            va["status"] = {"attached": attached}
        return va

    assert verdicts() == {"n": None, "m": None}
    assert sorted(computed) == ["m", "n"]
    assert verdicts() == {"n": None, "m": None} and computed == []  # both cached
    attachments = fh.listers[VOLUME_ATTACHMENTS]
    attachments.add(attachment("m"))  # added: names m
    assert verdicts() == {"n": None, "m": exceeded} and computed == ["m"]
    attachments.add(attachment("m", attached=True))  # status.attached changed: m again
    assert verdicts() == {"n": None, "m": exceeded} and computed == ["m"]
    attachments.add(attachment("n", attached=True))  # moved from m to n: both
    assert verdicts() == {"n": exceeded, "m": None} and sorted(computed) == ["m", "n"]
    attachments.delete("va-0")  # deleted: n only
    assert verdicts() == {"n": None, "m": None} and computed == ["n"]
    assert verdicts() == {"n": None, "m": None} and computed == []


def _attachment_to(name: str, node_name: str) -> dict[str, Any]:
    source = {"persistentVolumeName": "pv-0"}
    return {"metadata": {"name": name}, "spec": {"attacher": DRIVER, "nodeName": node_name, "source": source}}


def test_a_node_left_without_volume_attachments_is_forgotten_and_judged_afresh() -> None:
    """Node n allows 1 volume. Its per-node number and cached answer are dropped when its last
    VolumeAttachment goes (deleted, or moved to another node), not before; a node named again later is
    judged on what is there then, never on an answer cached while it had an attachment."""
    pvs = tuple(pv(f"pv-{i}", "", csi=(DRIVER, f"vol-{i}")) for i in range(3))
    pvcs = tuple(pvc(f"c-{i}", "", volume_name=f"pv-{i}") for i in range(3))
    fh = handle(pvs=pvs, pvcs=pvcs, csi_nodes=(_csi_node("n", 1), _csi_node("m", 1)))
    plugin = NodeVolumeLimits({}, fh)
    generations = plugin._va_generations
    assert generations is not None
    n, m = NodeInfo(node("n")), NodeInfo(node("m"))
    target = pod_with_claims("t", "c-2")
    exceeded = (Code.Unschedulable, [ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED])
    attachments = fh.listers[VOLUME_ATTACHMENTS]

    assert _limits(fh, n, target, plugin) is None
    attachments.add(_attachment_to("va-0", "n"))
    attachments.add(_attachment_to("va-1", "n"))
    assert _limits(fh, n, target, plugin) == exceeded
    attachments.delete("va-0")  # one left: still remembered
    assert len(generations) == 1 and "n" in plugin._by_node
    attachments.delete("va-1")  # the last: forgotten, with its cached answer
    assert len(generations) == 0 and "n" not in plugin._by_node
    assert _limits(fh, n, target, plugin) is None
    attachments.add(_attachment_to("va-2", "n"))
    assert _limits(fh, n, target, plugin) == exceeded
    assert _limits(fh, m, target, plugin) is None
    attachments.add(_attachment_to("va-2", "m"))  # moved: n has none left, m has one
    assert generations.of("n") == 0 and generations.of("m") > 0 and len(generations) == 1
    assert "n" not in plugin._by_node
    assert _limits(fh, n, target, plugin) is None
    assert _limits(fh, m, target, plugin) == exceeded
    attachments.delete("va-2")
    assert len(generations) == 0 and plugin._by_node.keys() == {"n"}
    assert _limits(fh, m, target, plugin) is None


def test_cached_answers_of_nodes_gone_from_the_snapshot_are_swept_out() -> None:
    """Answers of nodes no longer in the snapshot (deleted) are dropped once they pass a small bound;
    the snapshot's nodes keep theirs."""
    pvs = (pv("pv-0", "", csi=(DRIVER, "vol-0")),)
    fh = handle(pvs=pvs, pvcs=(pvc("c-0", "", volume_name="pv-0"),))
    live = NodeInfo(node("live"))
    fh._snapshot = FakeSnapshot([live])
    fh.listers[CSI_NODES].add(_csi_node("live", 1))
    plugin = NodeVolumeLimits({}, fh)
    target = pod_with_claims("t", "c-0")
    assert _limits(fh, live, target, plugin) is None
    gone = [f"gone-{i}" for i in range(80)]
    for name in gone:
        fh.listers[CSI_NODES].add(_csi_node(name, 1))
        assert _limits(fh, NodeInfo(node(name)), target, plugin) is None
    assert "live" in plugin._by_node
    assert len(plugin._by_node) <= 1 + 64
    assert gone[0] not in plugin._by_node


# --- VolumeBinding: bound claims' volumes looked up once per cycle -----------------------------------


@pytest.mark.parametrize(
    ("volumes", "want_on_zone_a", "want_on_zone_b"),
    [
        # claim order decides: a failing affinity before a missing volume reports the conflict.
        (("pv-b", "missing"), (ERR_REASON_NODE_CONFLICT,), (ERR_REASON_PV_NOT_EXIST,)),
        (("missing", "pv-b"), (ERR_REASON_PV_NOT_EXIST,), (ERR_REASON_PV_NOT_EXIST,)),
        (("pv-any", "pv-b"), (ERR_REASON_NODE_CONFLICT,), None),
        (("pv-any",), None, None),
    ],
)
def test_bound_claims_verdicts_per_node(
    volumes: tuple[str, ...], want_on_zone_a: tuple[str, ...] | None, want_on_zone_b: tuple[str, ...] | None
) -> None:
    """The first Filter of a cycle looks the volumes up; every node then gets upstream's verdict."""
    pvcs = tuple(pvc(f"c-{i}", "", volume_name=name, phase="Bound") for i, name in enumerate(volumes))
    by_name = {name: claim for name, claim in zip(volumes, pvcs, strict=True)}
    pvs = []
    if "pv-b" in volumes:
        pvs.append(pv("pv-b", "", phase="Bound", affinity={"zone": ["b"]}, claim=by_name["pv-b"]))
    if "pv-any" in volumes:
        pvs.append(pv("pv-any", "", phase="Bound", claim=by_name["pv-any"]))
    fh = handle(pvs=tuple(pvs), pvcs=pvcs)
    plugin = VolumeBinding({}, fh)
    target = pod_with_claims("t", *(f"c-{i}" for i in range(len(volumes))))
    state = CycleState()
    _, status = plugin.pre_filter(state, target, ())
    assert status is None
    for zone, want in (("a", want_on_zone_a), ("b", want_on_zone_b), ("a", want_on_zone_a)):
        got = plugin.filter(state, target, NodeInfo(node(f"n-{zone}", labels={"zone": zone})))
        assert (None if got is None else tuple(got.reasons)) == want


# --- DynamicResources: pools per node and allocated devices -----------------------------------------


def _dra(claims: list[dict[str, Any]], slices: list[dict[str, Any]]) -> tuple[DynamicResources, FakeHandle]:
    fh = FakeHandle(
        objects={
            RESOURCE_CLAIMS: claims,
            RESOURCE_SLICES: slices,
            DEVICE_CLASSES: [device_class(CLASS_A, f'device.driver == "{DRIVER_A}"')],
        }
    )
    return DynamicResources({}, fh), fh


def _claim_pod(name: str, claim_name: str) -> PodInfo:
    claims = [{"name": "c", "resourceClaimName": claim_name}]
    body = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c"}], "resourceClaims": claims},
    }
    return PodInfo(body)


def _filter_all(
    pl: DynamicResources, p: PodInfo, nodes: list[NodeInfo], *, batch: bool = False
) -> dict[str, Any]:
    """Per node: the rejection's message, or the allocation results Filter recorded."""
    state = CycleState()
    _, status = pl.pre_filter(state, p, nodes)
    assert status is None
    verdicts = pl.filter_nodes(state, p, nodes) if batch else [pl.filter(state, p, n) for n in nodes]
    out: dict[str, Any] = {}
    for info, got in zip(nodes, verdicts, strict=True):
        out[info.name] = got.message() if got is not None else state.get("PreFilterDynamicResources")
    return {
        name: value if isinstance(value, str) else value.node_allocations.get(name)
        for name, value in out.items()
    }


def test_dra_caches_follow_slices_and_claims() -> None:
    nodes = [NodeInfo({"metadata": {"name": n, "labels": {}}}) for n in ("node-1", "node-2")]
    slices = [slice_("s-1", "node-1", "node-1", DRIVER_A, device("gpu-0"))]
    claims = [claim("c1", request(REQ_0)), claim("c2", request(REQ_0))]
    pl, fh = _dra(claims, slices)

    def agree(p: PodInfo) -> dict[str, Any]:
        got = _filter_all(pl, p, nodes)
        # A plugin built now on the same listers: no memo or cache from earlier pods.
        fresh = DynamicResources({}, fh)
        assert _filter_all(fresh, p, nodes) == got
        return got

    first = agree(_claim_pod("p1", "c1"))
    assert first["node-1"] is not None and first["node-2"] == "cannot allocate all claims"
    # c2 takes gpu-0 (the informer shows it allocated): node-1 has nothing left for c1.
    fh.listers[RESOURCE_CLAIMS].add(
        claim("c2", request(REQ_0), allocation=allocation(result(REQ_0, DRIVER_A, "node-1", "gpu-0")))
    )
    assert agree(_claim_pod("p1", "c1"))["node-1"] == "cannot allocate all claims"
    # A new slice for node-2: its pools change.
    fh.listers[RESOURCE_SLICES].add(slice_("s-2", "node-2", "node-2", DRIVER_A, device("gpu-0")))
    assert agree(_claim_pod("p1", "c1"))["node-2"] is not None
    # c2 released: gpu-0 of node-1 is free again.
    fh.listers[RESOURCE_CLAIMS].add(claim("c2", request(REQ_0)))
    assert agree(_claim_pod("p1", "c1"))["node-1"] is not None
    # A slice selecting nodes by label: nothing is cached per name, answers still right.
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}
    fh.listers[RESOURCE_SLICES].add(
        slice_("s-3", None, "shared", DRIVER_A, device("gpu-9"), nodeSelector=selector)
    )
    labelled = [NodeInfo({"metadata": {"name": "node-3", "labels": {"gpu": "yes"}}})]
    assert _filter_all(pl, _claim_pod("p1", "c1"), labelled)["node-3"] is not None


# --- CEL: device.driver == "name" judged natively ----------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        'device.driver == "driver-a"',
        " device . driver=='driver-a' ",
        'device.driver == "driver-b"',
        'device.driver == ""',
        'device.driver == "driver-a" ',
    ],
)
def test_driver_equality_agrees_with_the_interpreter(expression: str) -> None:
    compiled = CelCache().get_or_compile(expression)
    assert compiled.driver_equals is not None
    for driver in ("driver-a", "driver-b", "", "driver-a.example.com"):
        activation = device_activation(driver, device("d", {"model": "x"}))
        assert compiled.matches(activation) == (compiled.driver_equals == driver)


@pytest.mark.parametrize(
    "expression",
    [
        'device.driver == "a" || true',
        'device.driver != "a"',
        'device.driver == "a\\"b"',
        'device.attributes["driver-a"].model == "x"',
        '"a" == device.driver',
    ],
)
def test_other_expressions_take_the_interpreter(expression: str) -> None:
    assert driver_equality(expression) is None


def test_random_driver_names_match_as_the_interpreter_does() -> None:
    rng = random.Random(7)
    cache = CelCache()
    alphabet = "abc.-/_0"
    for _ in range(30):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        compiled = cache.get_or_compile(f'device.driver == "{name}"')
        for driver in (name, name + "x", "a"):
            try:
                want = compiled.matches(device_activation(driver, device("d")))
            except CelError:  # pragma: no cover - an interpreter failure would be a test bug
                raise
            assert (compiled.driver_equals == driver) == want


# --- PodTopologySpread: default constraints per (namespace, labels, controller) ---------------------


def _spread_pod(name: str, labels: dict[str, str], owner: tuple[str, str, str] | None = None) -> PodInfo:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels}
    if owner is not None:
        api_version, kind, owner_name = owner
        meta["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": owner_name, "controller": True}
        ]
    return PodInfo({"metadata": meta, "spec": {"containers": [{"name": "c"}]}})


def _selected_by(plugin: PodTopologySpread, pod: PodInfo) -> list[Any]:
    """What the defaulted constraints' selector accepts among a few label sets."""
    candidates = ({"app": "web"}, {"app": "web", "tier": "fe"}, {"tier": "fe"}, {"app": "db"})
    constraints = plugin.constraints(pod, "ScheduleAnyway")
    if not constraints:
        return []
    return [c for c in candidates if constraints[0].selector.matches(c)]


def test_default_constraints_follow_services_and_controllers() -> None:
    """One plugin remembers its answers; after each change of a Service or controller it must agree
    with a plugin that has never seen the pods."""
    fh = FakeHandle(objects={SERVICES: [], REPLICA_SETS: []})
    cached = PodTopologySpread({}, fh)
    web = _spread_pod("a", {"app": "web", "tier": "fe"})
    same_labels = _spread_pod("b", {"app": "web", "tier": "fe"})
    owned = _spread_pod("c", {"app": "web", "tier": "fe"}, ("apps/v1", "ReplicaSet", "rs"))

    def check(pod: PodInfo, want: list[Any]) -> None:
        assert _selected_by(cached, pod) == want
        assert _selected_by(PodTopologySpread({}, fh), pod) == want

    check(web, [])
    check(owned, [])
    fh.listers[SERVICES].add(
        {"metadata": {"name": "s", "namespace": "ns"}, "spec": {"selector": {"tier": "fe"}}}
    )
    check(web, [{"app": "web", "tier": "fe"}, {"tier": "fe"}])
    check(same_labels, [{"app": "web", "tier": "fe"}, {"tier": "fe"}])
    fh.listers[REPLICA_SETS].add(
        {"metadata": {"name": "rs", "namespace": "ns"}, "spec": {"selector": {"matchLabels": {"app": "web"}}}}
    )
    check(owned, [{"app": "web", "tier": "fe"}])
    check(web, [{"app": "web", "tier": "fe"}, {"tier": "fe"}])  # not owned: the Service alone
    fh.listers[SERVICES].delete("s", "ns")
    check(owned, [{"app": "web"}, {"app": "web", "tier": "fe"}])
    check(web, [])


# --- parsed constraints shared between pods -----------------------------------------------------------


def test_spread_constraints_with_match_label_keys_are_parsed_per_labels() -> None:
    """Equal constraints are parsed once, but matchLabelKeys make the pod's labels part of them."""
    constraint = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["rev"],
    }

    def spread(name: str, rev: str) -> PodInfo:
        meta = {"name": name, "namespace": "ns", "labels": {"app": "web", "rev": rev}}
        return PodInfo({"metadata": meta, "spec": {"topologySpreadConstraints": [dict(constraint)]}})

    plugin = PodTopologySpread({}, FakeHandle())
    (first,) = plugin.constraints(spread("a", "1"), "DoNotSchedule")
    (again,) = plugin.constraints(spread("b", "1"), "DoNotSchedule")
    (other,) = plugin.constraints(spread("c", "2"), "DoNotSchedule")
    assert again is first
    assert first.selector.matches({"app": "web", "rev": "1"})
    assert not other.selector.matches({"app": "web", "rev": "1"})
    assert other.selector.matches({"app": "web", "rev": "2"})


def test_affinity_terms_are_shared_within_a_namespace_only() -> None:
    """A term without namespaces means its own pod's namespace: equal specs in two namespaces differ."""
    term: dict[str, Any] = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
    affinity: dict[str, Any] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}

    def with_affinity(name: str, namespace: str) -> PodInfo:
        meta = {"name": name, "namespace": namespace}
        return PodInfo({"metadata": meta, "spec": {"affinity": copy.deepcopy(affinity)}})

    first = pod_affinity_terms(with_affinity("a", "ns1"))
    assert pod_affinity_terms(with_affinity("b", "ns1")) is first
    other = pod_affinity_terms(with_affinity("c", "ns2"))
    assert first.required_affinity[0].namespaces == frozenset({"ns1"})
    assert other.required_affinity[0].namespaces == frozenset({"ns2"})
    broken = copy.deepcopy(affinity)
    broken["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] = 7
    bad = PodInfo({"metadata": {"name": "d", "namespace": "ns1"}, "spec": {"affinity": broken}})
    assert pod_affinity_terms(bad).error is not None


# --- DynamicResources: allocation results per node across pods ------------------------------------


def _random_dra_cluster(rng: random.Random) -> tuple[list[NodeInfo], list[dict[str, Any]]]:
    nodes = [NodeInfo({"metadata": {"name": f"node-{i}", "labels": {}}}) for i in range(rng.randint(1, 4))]
    slices = []
    for info in nodes:
        devices = [
            device(f"gpu-{d}", {"model": rng.choice(["a100", "h100"]), "numa": rng.randint(0, 1)})
            for d in range(rng.randint(0, 4))
        ]
        slices.append(slice_(f"s-{info.name}", info.name, info.name, DRIVER_A, *devices))
    return nodes, slices


def _random_claim(rng: random.Random, name: str) -> dict[str, Any]:
    requests = []
    for r in range(rng.randint(1, 2)):
        extra: dict[str, Any] = {}
        if rng.random() < 0.4:
            model = rng.choice(["a100", "h100"])
            extra["selectors"] = [
                {"cel": {"expression": f'device.attributes["{DRIVER_A}"].model == "{model}"'}}
            ]
        requests.append(request(f"req-{r}", count=rng.randint(1, 2), **extra))
    constraints = [{"matchAttribute": f"{DRIVER_A}/numa"}] if rng.random() < 0.3 else None
    return claim(name, *requests, constraints=constraints)


@pytest.mark.parametrize("seed", range(12))
def test_allocation_memo_matches_fresh_allocations(seed: int) -> None:
    """Pods with random claims, one after another on random clusters, each reserving its devices (the
    informer then shows the claim allocated): every node's verdict with the kept results equals that
    of a plugin allocating afresh."""
    rng = random.Random(seed)
    nodes, slices = _random_dra_cluster(rng)
    claims = [_random_claim(rng, f"c{i}") for i in range(8)]
    remembering, fh = _dra(claims, slices)
    fresh = DynamicResources({}, fh)
    fresh.allocation_memo = None  # type: ignore[assignment]  # allocates on every node, every time
    memo = remembering.allocation_memo
    found = memo.get
    hits = 0

    def counting_get(key: Any) -> Any:
        nonlocal hits
        entry = found(key)
        hits += entry is not None
        return entry

    memo.get = counting_get  # type: ignore[method-assign]
    for index, raw in enumerate(claims):
        pod = _claim_pod(f"p{index}", raw["metadata"]["name"])
        got = _filter_all(remembering, pod, nodes, batch=index % 2 == 0)
        want = _filter_all(fresh, pod, nodes)
        assert got == want
        fitting = [name for name, value in got.items() if not isinstance(value, str) and value is not None]
        if not fitting:
            continue
        state = CycleState()
        remembering.pre_filter(state, pod, nodes)
        for info in nodes:
            remembering.filter(state, pod, info)
        chosen = rng.choice(fitting)
        assert remembering.reserve(state, pod, chosen) is None
        allocated = state.get("PreFilterDynamicResources").allocations[0]
        fh.listers[RESOURCE_CLAIMS].add({**raw, "status": {"allocation": allocated}})
    assert hits > 0


@pytest.mark.parametrize("seed", range(5))
def test_allocated_devices_memo_equals_a_fresh_union(seed: int) -> None:
    """Claims added, replaced by new versions (allocated, released, moved) and deleted at random: the
    memo's devices always equal the union over the listed claims."""
    rng = random.Random(seed)
    memo = AllocatedDevicesMemo()
    listed: dict[str, dict[str, Any]] = {}
    for _ in range(200):
        name = f"c{rng.randint(0, 12)}"
        if rng.random() < 0.2:
            listed.pop(name, None)
        else:
            status: dict[str, Any] = {}
            if rng.random() < 0.6:
                results = [
                    result(REQ_0, DRIVER_A, f"pool-{rng.randint(0, 2)}", f"dev-{rng.randint(0, 3)}")
                    for _ in range(rng.randint(1, 2))
                ]
                status["allocation"] = allocation(*results)
            listed[name] = claim(name, request(REQ_0), **status)
        claims = list(listed.values())
        want = all_allocated_devices(claims, InFlightClaims())
        assert memo.devices(claims) == want
        assert all_allocated_devices(claims, InFlightClaims(), memo) == want
