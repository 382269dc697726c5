"""SchedulerCache: nodes, ghosts, assigned pods of any scheduler, assume/forget, images, compare."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from scheduler.cache import CacheError, PodInfoCache, SchedulerCache, Snapshot
from scheduler.cache.cache import with_node_name
from scheduler.cache.echo import same_but_unread
from scheduler.framework.types import HostPort, PodInfo, PodSpecError

MI = 1024 * 1024
GI = 1024 * MI

_rv = itertools.count(1)


def make_node(
    name: str,
    cpu: str = "4",
    memory: str = "16Gi",
    labels: dict[str, str] | None = None,
    images: dict[str, int] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": f"node-{name}",
            "resourceVersion": str(next(_rv)),
            "labels": labels or {},
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "images": [{"names": [image], "sizeBytes": size} for image, size in (images or {}).items()],
        },
    }


def make_pod(
    name: str,
    node: str = "",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    host_port: int = 0,
    uid: str | None = None,
    phase: str = "Running",
    scheduler: str = "default-scheduler",
) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if cpu:
        requests["cpu"] = cpu
    if memory:
        requests["memory"] = memory
    container: dict[str, Any] = {"name": "c", "image": "busybox", "resources": {"requests": requests}}
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container]}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {
            "namespace": "default",
            "name": name,
            "uid": uid or f"uid-{name}",
            "resourceVersion": str(next(_rv)),
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def live(cache: SchedulerCache, name: str) -> Any:
    info = cache.node_info(name)
    assert info is not None
    return info


# -- PodInfoCache ---------------------------------------------------------------------------------------


def test_pod_info_cache_parses_each_version_once() -> None:
    infos = PodInfoCache()
    pod = make_pod("a", cpu="1")
    first = infos.get(pod)
    assert infos.get(dict(pod)) is first
    assert (infos.hits, infos.misses) == (1, 1)
    newer = make_pod("a", cpu="2")
    assert infos.get(newer) is not first
    assert infos.get(newer).requests.milli_cpu == 2000


def test_pod_info_cache_remembers_parse_errors() -> None:
    infos = PodInfoCache()
    bad = make_pod("bad", cpu="lots")
    for _ in range(2):
        with pytest.raises(PodSpecError, match="default/bad"):
            infos.get(bad)
    assert (infos.hits, infos.misses) == (1, 1)


def test_pod_info_cache_skips_pods_without_identity_and_evicts_lru() -> None:
    infos = PodInfoCache(max_size=2)
    anonymous = {"metadata": {"name": "x"}, "spec": {"containers": []}}
    assert infos.get(anonymous) is not infos.get(anonymous)
    assert len(infos) == 0
    a, b, c = make_pod("a"), make_pod("b"), make_pod("c")
    info_a = infos.get(a)
    infos.get(b)
    infos.get(a)  # a is now the most recent; b goes first
    infos.get(c)
    assert len(infos) == 2
    assert infos.get(a) is info_a
    misses = infos.misses
    infos.get(b)
    assert infos.misses == misses + 1


# -- nodes and ghosts -----------------------------------------------------------------------------------


def test_add_update_remove_node() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1", cpu="4"))
    assert live(cache, "n1").allocatable.milli_cpu == 4000
    cache.update_node(make_node("n1"), make_node("n1", cpu="8"))
    assert live(cache, "n1").allocatable.milli_cpu == 8000
    assert cache.node_names() == ["n1"]
    cache.remove_node(make_node("n1"))
    assert cache.node_info("n1") is None
    assert cache.sizes() == {"assumed_pods": 0, "pods": 0, "nodes": 0}
    cache.remove_node(make_node("n1"))  # unknown: ignored


def test_update_of_unknown_node_adds_it() -> None:
    cache = SchedulerCache()
    cache.update_node(None, make_node("n1"))
    assert cache.node_names() == ["n1"]


def test_removed_node_with_pods_stays_as_ghost_until_its_pods_go() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    pod = make_pod("p", node="n1", cpu="1")
    cache.add_pod(pod)
    cache.remove_node(make_node("n1"))
    ghost = live(cache, "n1")
    assert ghost.node is None
    assert ghost.requested.milli_cpu == 1000
    assert cache.node_names() == []
    assert cache.snapshot().get("n1") is None
    cache.remove_pod(pod)
    assert cache.node_info("n1") is None
    assert cache.sizes()["nodes"] == 0


def test_ghost_comes_back_to_life_with_its_pods() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    cache.add_pod(make_pod("p", node="n1", cpu="1"))
    cache.remove_node(make_node("n1"))
    cache.add_node(make_node("n1"))
    info = cache.snapshot().get("n1")
    assert info is not None
    assert info.requested.milli_cpu == 1000
    assert set(info.pods) == {"default/p"}


def test_pod_on_unknown_node_is_counted_once_the_node_arrives() -> None:
    cache = SchedulerCache()
    cache.add_pod(make_pod("p", node="n1", cpu="500m"))
    assert live(cache, "n1").node is None
    assert cache.snapshot().num_nodes() == 0
    cache.add_node(make_node("n1"))
    info = cache.snapshot().get("n1")
    assert info is not None
    assert info.requested.milli_cpu == 500


# -- assigned pods --------------------------------------------------------------------------------------


def test_pods_of_every_scheduler_are_counted() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    cache.add_pod(make_pod("mine", node="n1", cpu="1", scheduler="py-scheduler"))
    cache.add_pod(make_pod("theirs", node="n1", cpu="2", scheduler="default-scheduler"))
    cache.add_pod(make_pod("other", node="n1", cpu="250m", scheduler="volcano"))
    assert live(cache, "n1").requested.milli_cpu == 3250


def test_requested_non_zero_and_ports_follow_every_pod_operation() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    sized = make_pod("sized", node="n1", cpu="500m", memory="1Gi", host_port=8080)
    empty = make_pod("empty", node="n1")
    cache.add_pod(sized)
    cache.add_pod(empty)
    info = live(cache, "n1")
    assert (info.requested.milli_cpu, info.requested.memory) == (500, GI)
    # A pod without requests is charged 100m / 200Mi for spreading purposes.
    assert (info.non_zero_requested.milli_cpu, info.non_zero_requested.memory) == (600, GI + 200 * MI)
    assert info.used_ports == {HostPort("0.0.0.0", "TCP", 8080): 1}

    resized = make_pod("sized", node="n1", cpu="2", memory="2Gi", host_port=9090)
    cache.update_pod(sized, resized)
    info = live(cache, "n1")
    assert (info.requested.milli_cpu, info.requested.memory) == (2000, 2 * GI)
    assert (info.non_zero_requested.milli_cpu, info.non_zero_requested.memory) == (2100, 2 * GI + 200 * MI)
    assert info.used_ports == {HostPort("0.0.0.0", "TCP", 9090): 1}

    cache.remove_pod(resized)
    cache.remove_pod(empty)
    info = live(cache, "n1")
    assert info.requested.is_zero()
    assert info.non_zero_requested.is_zero()
    assert info.used_ports == {}
    assert info.pods == {}


def test_terminal_pods_are_not_counted() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    cache.add_pod(make_pod("done", node="n1", cpu="1", phase="Succeeded"))
    assert live(cache, "n1").requested.milli_cpu == 0
    running = make_pod("job", node="n1", cpu="1")
    cache.add_pod(running)
    cache.update_pod(running, make_pod("job", node="n1", cpu="1", phase="Failed"))
    assert live(cache, "n1").requested.milli_cpu == 0
    assert cache.get_pod("default/job") is None


def test_terminal_version_is_removed_even_when_its_parse_is_cached() -> None:
    cache = SchedulerCache()
    running = make_pod("p", node="n1", cpu="1")
    cache.add_pod(running)
    # Same uid and resourceVersion: the PodInfoCache returns the Running version's PodInfo.
    done = {**running, "status": {"phase": "Succeeded"}}
    cache.update_pod(running, done)
    assert cache.get_pod("default/p") is None


def test_parsed_pod_infos_are_accepted() -> None:
    cache = SchedulerCache()
    info = PodInfo(make_pod("p", node="n1", cpu="1"))
    cache.add_pod(info)
    assert cache.get_pod("default/p") is info
    cache.remove_pod(info)
    assert cache.get_pod("default/p") is None


def test_unbound_update_of_an_assumed_pod_keeps_the_assumption() -> None:
    cache = SchedulerCache()
    pending = make_pod("p", cpu="1")
    cache.assume_pod(PodInfo(pending), "n1")
    cache.update_pod(pending, make_pod("p", cpu="1"))
    assert cache.is_assumed("default/p")
    assert live(cache, "n1").requested.milli_cpu == 1000


def test_unassigned_and_unparseable_pods_are_ignored() -> None:
    cache = SchedulerCache()
    cache.add_pod(make_pod("pending", cpu="1"))
    cache.add_pod(make_pod("bad", node="n1", cpu="lots"))
    assert cache.sizes() == {"assumed_pods": 0, "pods": 0, "nodes": 0}


def test_unparseable_update_keeps_counting_the_previous_version() -> None:
    cache = SchedulerCache()
    good = make_pod("p", node="n1", cpu="1")
    cache.add_pod(good)
    cache.update_pod(good, make_pod("p", node="n1", cpu="lots"))
    assert live(cache, "n1").requested.milli_cpu == 1000


def test_update_of_uncached_pod_adds_it_and_duplicate_add_replaces() -> None:
    cache = SchedulerCache()
    cache.update_pod(make_pod("p"), make_pod("p", node="n1", cpu="1"))
    cache.add_pod(make_pod("p", node="n1", cpu="3"))
    assert live(cache, "n1").requested.milli_cpu == 3000
    assert cache.sizes()["pods"] == 1


def test_delete_of_an_older_incarnation_is_ignored() -> None:
    cache = SchedulerCache()
    cache.add_pod(make_pod("p", node="n1", cpu="1", uid="new"))
    cache.remove_pod(make_pod("p", node="n1", uid="old"))
    assert cache.get_pod("default/p") is not None
    cache.remove_pod(make_pod("p", node="n1", uid="new"))
    assert cache.get_pod("default/p") is None


def test_recreated_pod_replaces_the_old_one() -> None:
    cache = SchedulerCache()
    cache.add_pod(make_pod("p", node="n1", cpu="1", uid="u1"))
    cache.add_pod(make_pod("p", node="n2", cpu="2", uid="u2"))
    assert cache.node_info("n1") is None  # the node-less NodeInfo went with its last pod
    assert live(cache, "n2").requested.milli_cpu == 2000


def test_every_change_bumps_the_generation_of_the_touched_node() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    cache.add_node(make_node("n2"))
    assert (live(cache, "n1").generation, live(cache, "n2").generation) == (1, 2)
    pod = make_pod("p", node="n1", cpu="1")
    cache.add_pod(pod)
    assert live(cache, "n1").generation == cache.generation == 3
    info = cache.pod_infos.get(make_pod("q", cpu="1"))
    cache.assume_pod(info, "n2")
    assert live(cache, "n2").generation == 4
    cache.finish_binding("default/q")  # no accounting change: no new generation
    assert cache.generation == 4
    cache.forget_pod("default/q")
    cache.remove_pod(pod)
    assert (live(cache, "n1").generation, live(cache, "n2").generation) == (6, 5)


# -- assume / confirm / forget --------------------------------------------------------------------------


def test_assume_returns_a_copy_bound_to_the_node_and_counts_it() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    original = PodInfo(make_pod("p", cpu="1", host_port=80))
    assumed = cache.assume_pod(original, "n1")
    assert assumed is not original
    assert assumed.node_name == "n1"
    assert assumed.pod["spec"]["nodeName"] == "n1"
    assert assumed.spec["nodeName"] == "n1"
    assert original.node_name == ""
    assert "nodeName" not in original.pod["spec"]
    assert assumed.requests is original.requests
    assert (assumed.key, assumed.uid) == (original.key, original.uid)
    info = live(cache, "n1")
    assert info.requested.milli_cpu == 1000
    assert info.used_ports == {HostPort("0.0.0.0", "TCP", 80): 1}
    assert cache.is_assumed("default/p")
    assert cache.assumed_count() == 1
    with pytest.raises(CacheError):
        cache.assume_pod(original, "n1")


def test_add_confirms_an_assumed_pod() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    cache.assume_pod(PodInfo(make_pod("p", cpu="1")), "n1")
    cache.finish_binding("default/p")
    cache.add_pod(make_pod("p", node="n1", cpu="1"))
    assert not cache.is_assumed("default/p")
    assert cache.assumed_count() == 0
    assert live(cache, "n1").requested.milli_cpu == 1000
    assert cache.forget_pod("default/p") is False
    assert live(cache, "n1").requested.milli_cpu == 1000


def test_confirmation_on_another_node_moves_the_pod() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    cache.add_node(make_node("n2"))
    cache.assume_pod(PodInfo(make_pod("p", cpu="1")), "n1")
    cache.update_pod(make_pod("p", cpu="1"), make_pod("p", node="n2", cpu="1"))
    assert live(cache, "n1").requested.milli_cpu == 0
    assert live(cache, "n2").requested.milli_cpu == 1000


def test_forget_undoes_assume() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    cache.assume_pod(PodInfo(make_pod("p", cpu="1", host_port=80)), "n1")
    assert cache.forget_pod("default/p") is True
    info = live(cache, "n1")
    assert info.requested.is_zero()
    assert info.used_ports == {}
    assert not cache.is_assumed("default/p")
    assert cache.forget_pod("default/p") is False
    assert cache.forget_pod("default/never") is False


def test_forget_and_finish_binding_by_uid_leave_a_namesake_alone() -> None:
    """The binding cycle of a pod removed when its deletion started ends after a namesake was
    assumed: its forget and its finish_binding name the old uid, and touch nothing."""
    clock = FakeClock()
    cache = SchedulerCache(ttl=30, clock=clock)
    cache.add_node(make_node("n1"))
    namesake = make_pod("p", cpu="1")
    namesake["metadata"]["uid"] = "uid-new"
    cache.assume_pod(PodInfo(namesake), "n1")
    assert cache.forget_pod("default/p", "uid-old") is False
    cache.finish_binding("default/p", "uid-old")
    clock.now += 1e6
    assert cache.cleanup_assumed() == []  # not marked finished: still binding
    assert cache.is_assumed("default/p") and live(cache, "n1").requested.milli_cpu == 1000
    assert cache.forget_pod("default/p", "uid-new") is True


def test_assumed_pod_on_unknown_node_leaves_no_ghost_when_forgotten() -> None:
    cache = SchedulerCache()
    cache.assume_pod(PodInfo(make_pod("p", cpu="1")), "gone")
    assert cache.forget_pod("default/p")
    assert cache.sizes() == {"assumed_pods": 0, "pods": 0, "nodes": 0}


def test_deleting_an_assumed_pod_removes_it() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1"))
    pending = make_pod("p", cpu="1")
    cache.assume_pod(PodInfo(pending), "n1")
    cache.remove_pod(pending)
    assert cache.assumed_count() == 0
    assert live(cache, "n1").requested.is_zero()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_assumed_pods_never_expire_without_ttl() -> None:
    clock = FakeClock()
    cache = SchedulerCache(clock=clock)
    cache.assume_pod(PodInfo(make_pod("p", cpu="1")), "n1")
    cache.finish_binding("default/p")
    clock.now += 1e9
    assert cache.cleanup_assumed() == []
    assert cache.is_assumed("default/p")


def test_assumed_pods_expire_after_ttl_once_binding_finished() -> None:
    clock = FakeClock()
    cache = SchedulerCache(ttl=30, clock=clock)
    cache.add_node(make_node("n1"))
    cache.assume_pod(PodInfo(make_pod("bound", cpu="1")), "n1")
    cache.assume_pod(PodInfo(make_pod("binding", cpu="2")), "n1")
    cache.finish_binding("default/bound")
    clock.now += 30
    assert cache.cleanup_assumed() == []  # the deadline itself is not past it
    clock.now += 1
    assert cache.cleanup_assumed() == ["default/bound"]
    assert cache.is_assumed("default/binding")  # still binding: never expires
    assert live(cache, "n1").requested.milli_cpu == 2000
    clock.now += 1e6
    assert cache.cleanup_assumed() == []


def test_confirmed_pod_does_not_expire() -> None:
    clock = FakeClock()
    cache = SchedulerCache(ttl=1, clock=clock)
    cache.assume_pod(PodInfo(make_pod("p", cpu="1")), "n1")
    cache.finish_binding("default/p")
    cache.add_pod(make_pod("p", node="n1", cpu="1"))
    clock.now += 10
    assert cache.cleanup_assumed() == []
    assert live(cache, "n1").requested.milli_cpu == 1000


# -- images ---------------------------------------------------------------------------------------------


def test_image_counts_follow_node_add_update_remove() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1", images={"nginx": 100, "redis": 50}))
    cache.add_node(make_node("n2", images={"nginx": 100}))
    assert (cache.image_num_nodes("nginx"), cache.image_num_nodes("redis")) == (2, 1)
    snap = cache.snapshot()
    assert (snap.image_num_nodes("nginx"), snap.image_num_nodes("redis")) == (2, 1)
    assert snap.image_num_nodes("absent") == 0

    cache.update_node(None, make_node("n2", images={"redis": 50}))
    assert (cache.image_num_nodes("nginx"), cache.image_num_nodes("redis")) == (1, 2)
    # The snapshot keeps its counts until it is updated.
    assert (snap.image_num_nodes("nginx"), snap.image_num_nodes("redis")) == (2, 1)
    cache.update_snapshot(snap)
    assert (snap.image_num_nodes("nginx"), snap.image_num_nodes("redis")) == (1, 2)

    cache.add_pod(make_pod("p", node="n1"))
    cache.remove_node(make_node("n1"))  # a ghost's images no longer count
    assert (cache.image_num_nodes("nginx"), cache.image_num_nodes("redis")) == (0, 1)
    cache.add_node(make_node("n1", images={"nginx": 100}))
    assert cache.image_num_nodes("nginx") == 1
    assert cache.dump()["images"] == {"nginx": 1, "redis": 1}


# -- dump and compare -----------------------------------------------------------------------------------


def test_dump_is_plain_data() -> None:
    cache = SchedulerCache()
    cache.add_node(make_node("n1", labels={"topology.kubernetes.io/zone": "a"}))
    cache.add_pod(make_pod("p", node="n1", cpu="1", host_port=80))
    cache.assume_pod(PodInfo(make_pod("q")), "n1")
    dump = cache.dump()
    node = dump["nodes"]["n1"]
    assert node["ghost"] is False
    assert node["pods"] == ["default/p", "default/q"]
    assert node["requested"]["milli_cpu"] == 1000
    assert node["non_zero_requested"]["milli_cpu"] == 1100
    assert node["allocatable"]["milli_cpu"] == 4000
    assert node["used_ports"] == ["0.0.0.0/TCP/80"]
    assert dump["assumed_pods"] == ["default/q"]
    assert dump["generation"] == cache.generation


def test_compare_reports_drift() -> None:
    n1, n2, n3 = make_node("n1"), make_node("n2"), make_node("n3")
    p1 = make_pod("p1", node="n1")
    p2 = make_pod("p2", node="n1")
    cache = SchedulerCache()
    for node in (n1, n2):
        cache.add_node(node)
    cache.add_pod(p1)
    cache.add_pod(p2)
    pending = make_pod("pending")
    cache.assume_pod(PodInfo(pending), "n2")
    store_pods = [p1, p2, pending, make_pod("done", node="n1", phase="Succeeded")]
    assert cache.compare([n1, n2], store_pods) == []

    problems = cache.compare(
        [n1, n3],
        [make_pod("p1", node="n2"), make_pod("p3", node="n1"), make_pod("p2", uid="other")],
    )
    assert problems == [
        "node n3 is missing from the cache",
        "node n2 is in the cache but not in the store",
        "pod default/p1: the cache has node n1, the store n2",
        "pod default/p3 on node n1 is missing from the cache",
        "pod default/p2 is in the cache but is not assigned and running in the store",
        "assumed pod default/pending on node n2 is in the cache but not in the store",
    ]
    assert cache.compare([n1, n2], [p1, make_pod("p2", node="n1", uid="new"), pending]) == [
        "pod default/p2: the cache has uid uid-p2, the store new"
    ]


def test_snapshot_of_empty_cache() -> None:
    snap = Snapshot()
    SchedulerCache().update_snapshot(snap)
    assert snap.num_nodes() == 0
    assert list(snap.node_infos()) == []
    assert snap.get("x") is None
    assert snap.index_of("x") is None


# --- a newer version of a pod reuses its parsed PodInfo when nothing parsed can differ -------------


def _bound_version(pod: dict[str, Any], node: str) -> dict[str, Any]:
    """What the watch delivers after the Binding: nodeName set, PodScheduled=True, a new version."""
    bound = copy.deepcopy(pod)
    bound["spec"]["nodeName"] = node
    bound["metadata"]["resourceVersion"] = str(next(_rv))
    bound["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    return bound


def test_bound_version_of_an_assumed_pod_reuses_the_assumed_pod_info() -> None:
    infos = PodInfoCache()
    cache = SchedulerCache(pod_infos=infos)
    cache.add_node(make_node("n1"))
    pending = make_pod("p", cpu="500m", memory="1Gi")
    assumed = cache.assume_pod(infos.get(pending), "n1")
    assumed.derived("test/memo", lambda info: "kept")
    bound = _bound_version(pending, "n1")
    cache.add_pod(bound)
    assert infos.successors == 1
    confirmed = cache.get_pod("default/p")
    assert confirmed is not None and confirmed is not assumed
    # The confirmed PodInfo describes the bound version: its dict, its resourceVersion, its node.
    assert confirmed.pod is bound and confirmed.resource_version == bound["metadata"]["resourceVersion"]
    assert confirmed.node_name == "n1" and confirmed.requests == assumed.requests
    assert confirmed.derived("test/memo", lambda info: "rebuilt") == "kept"
    assert not cache.is_assumed("default/p")
    node = cache.node_info("n1")
    assert node is not None and node.requested.milli_cpu == 500 and node.requested.memory == GI


def test_successor_and_assumed_copies_carry_every_parsed_fact() -> None:
    """Every PodInfo slot is either carried over or set for the new version: a slot added to PodInfo
    and forgotten by the copies fails here."""
    infos = PodInfoCache()
    pending = make_pod("p", cpu="500m", memory="1Gi")
    pending["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    pending["spec"]["priority"] = 7
    pending["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
            ]
        }
    }
    original = infos.get(pending)
    original.derived("test/memo", lambda info: "kept")
    assumed = with_node_name(original, "n1")
    bound = _bound_version(pending, "n1")
    confirmed = assumed.successor(bound)
    assert confirmed is not None
    changed = {"pod", "spec", "node_name", "resource_version", "memo"}
    for slot in PodInfo.__slots__:
        if slot not in changed:
            assert getattr(assumed, slot) == getattr(original, slot), slot
            assert getattr(confirmed, slot) == getattr(original, slot), slot
    assert assumed.spec["nodeName"] == "n1" and assumed.pod["spec"] is assumed.spec
    assert "nodeName" not in original.spec
    assert (confirmed.pod, confirmed.spec) == (bound, bound["spec"])
    assert confirmed.resource_version == bound["metadata"]["resourceVersion"] != original.resource_version
    assert assumed.node_name == confirmed.node_name == "n1"
    assert assumed.memo == confirmed.memo == original.memo
    assert assumed.memo is not original.memo and confirmed.memo is not assumed.memo
    parsed = PodInfo(bound)
    for slot in PodInfo.__slots__:
        if slot != "memo":
            assert getattr(confirmed, slot) == getattr(parsed, slot), slot


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu="2"), id="spec"
        ),
        pytest.param(lambda p: p["metadata"].update(labels={"app": "x"}), id="labels"),
        pytest.param(lambda p: p["metadata"].update(annotations={"a": "b"}), id="annotations"),
        pytest.param(lambda p: p["metadata"].update(uid="another"), id="uid"),
        pytest.param(
            lambda p: p["status"].update(
                containerStatuses=[{"name": "c", "resources": {"requests": {"cpu": "2"}}}]
            ),
            id="status-resources",
        ),
    ],
)
def test_a_version_that_may_parse_differently_is_parsed(change: Any) -> None:
    infos = PodInfoCache()
    cache = SchedulerCache(pod_infos=infos)
    cache.add_node(make_node("n1"))
    pending = make_pod("p", cpu="500m")
    cache.assume_pod(infos.get(pending), "n1")
    bound = _bound_version(pending, "n1")
    change(bound)
    assert infos.get(pending).successor(bound) is None
    cache.add_pod(bound)
    assert infos.successors == 0
    confirmed = cache.get_pod("default/p")
    assert confirmed is not None and confirmed.pod is bound
    expected = PodInfo(bound)
    assert confirmed.requests == expected.requests


def test_an_echo_whose_status_reports_resources_is_parsed_and_still_held_in_place() -> None:
    """The echo is compared once, before parsing; equal status resources in both versions still make
    the new version parsed (in-place resize reads them), as ``PodInfo.successor`` decides."""
    infos = PodInfoCache()
    cache = SchedulerCache(pod_infos=infos)
    cache.add_node(make_node("n1"))
    pending = make_pod("p", cpu="500m")
    pending["status"]["containerStatuses"] = [{"name": "c", "allocatedResources": {"cpu": "500m"}}]
    assumed = cache.assume_pod(infos.get(pending), "n1")
    assumed.derived("test/memo", lambda info: "assumed")
    generation = cache.node_info("n1").generation  # type: ignore[union-attr]
    bound = _bound_version(pending, "n1")
    bound["status"] = copy.deepcopy(pending["status"])
    bound["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    assert same_but_unread(assumed.pod, bound)
    cache.add_pod(bound)
    assert infos.successors == 0
    confirmed = cache.get_pod("default/p")
    assert confirmed is not None and confirmed.pod is bound and not cache.is_assumed("default/p")
    assert confirmed.derived("test/memo", lambda info: "parsed") == "parsed"
    node = cache.node_info("n1")
    assert node is not None and node.generation == generation and node.requested.milli_cpu == 500


def test_status_only_updates_of_a_bound_pod_reuse_its_pod_info() -> None:
    infos = PodInfoCache()
    cache = SchedulerCache(pod_infos=infos)
    cache.add_node(make_node("n1"))
    running = make_pod("p", "n1", cpu="1")
    cache.add_pod(running)
    newer = copy.deepcopy(running)
    newer["metadata"]["resourceVersion"] = str(next(_rv))
    newer["status"]["startTime"] = "2024-01-01T00:00:00Z"
    cache.update_pod(running, newer)
    assert infos.successors == 1
    info = cache.get_pod("default/p")
    assert info is not None and info.pod is newer
    node = cache.node_info("n1")
    assert node is not None and node.requested.milli_cpu == 1000
