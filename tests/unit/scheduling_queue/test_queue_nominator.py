"""The nominator: node -> pods nominated there by preemption."""

from __future__ import annotations

from collections.abc import Sequence

from scheduling_queue import FakeClock, Nominator, Pod, SchedulingQueue
from scheduling_queue.testing import make_pod, with_changes


def names(pods: Sequence[Pod]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_add_delete_and_lookup() -> None:
    n = Nominator()
    a, b = make_pod("a"), make_pod("b")
    n.add_nominated_pod(a, "node-1")
    n.add_nominated_pod(b, "node-1")
    assert names(n.nominated_pods_for_node("node-1")) == ["a", "b"]
    n.add_nominated_pod(a, "node-2")  # re-nominating moves the pod
    assert names(n.nominated_pods_for_node("node-1")) == ["b"]
    assert names(n.nominated_pods_for_node("node-2")) == ["a"]
    assert n.nominated_node_for(a) == "node-2"
    n.add_nominated_pod(a, "")  # clears
    assert n.nominated_pods_for_node("node-2") == [] and n.nominated_node_for(a) == ""
    n.delete_nominated_pod_if_exists(b)
    n.delete_nominated_pod_if_exists(b)
    assert len(n) == 0


def test_noop_mode_uses_status_and_bound_pods_are_ignored() -> None:
    n = Nominator()
    n.add_nominated_pod(make_pod("a", nominated_node_name="node-9"))
    assert names(n.nominated_pods_for_node("node-9")) == ["a"]
    n.add_nominated_pod(make_pod("b"))
    assert len(n) == 1
    n.add_nominated_pod(make_pod("c", node_name="node-1"), "node-1")
    assert len(n) == 1


def test_update_keeps_an_in_memory_nomination_and_swaps_the_pod() -> None:
    n = Nominator()
    pod = make_pod("a")
    n.add_nominated_pod(pod, "node-1")
    newer = with_changes(pod, metadata={"labels": {"x": "y"}})
    n.update_nominated_pod(pod, newer)
    assert n.nominated_pods_for_node("node-1") == [newer]
    moved = with_changes(newer, status={"nominatedNodeName": "node-2"})
    n.update_nominated_pod(newer, moved)
    assert n.nominated_pods_for_node("node-1") == [] and n.nominated_pods_for_node("node-2") == [moved]
    untouched = make_pod("z")
    n.update_nominated_pod(untouched, with_changes(untouched, metadata={"labels": {"q": "1"}}))
    assert len(n) == 1


def test_queue_tracks_nominations_of_its_pods() -> None:
    q = SchedulingQueue(clock=FakeClock())
    pod = make_pod("a", nominated_node_name="node-1")
    q.add(pod)
    assert q.nominator.nominated_pods_for_node("node-1") == [pod]
    newer = with_changes(pod, metadata={"labels": {"x": "y"}})
    q.update(pod, newer)
    assert q.nominator.nominated_pods_for_node("node-1") == [newer]
    q.delete(newer)
    assert q.nominator.nominated_pods_for_node("node-1") == []


def test_a_withdrawn_nomination_is_not_brought_back_by_the_echo_of_its_own_write() -> None:
    """A pod that waited at Permit had nominatedNodeName=node-1 published, then was rejected: the
    informer update showing node-1 (the write landing late) must not nominate it again; an update with
    another value (the clearing patch landed) or a new nomination by the scheduler ends the withdrawal."""
    n = Nominator()
    plain, echo = make_pod("a"), make_pod("a", nominated_node_name="node-1")
    n.withdraw(plain, "node-1")
    n.update_nominated_pod(plain, echo)
    assert n.nominated_node_for(echo) == "" and len(n) == 0
    n.add_nominated_pod(echo)  # the same, seen as an add (ModeNoop)
    assert len(n) == 0
    cleared = make_pod("a")
    n.update_nominated_pod(echo, cleared)
    # Withdrawal over: a later nomination to the same node, published by preemption, counts again.
    n.update_nominated_pod(cleared, echo)
    assert n.nominated_node_for(echo) == "node-1"

    b, b_echo = make_pod("b"), make_pod("b", nominated_node_name="node-2")
    n.withdraw(b, "node-2")
    n.add_nominated_pod(b, "node-2")  # the scheduler nominates it anew (preemption)
    n.update_nominated_pod(b, b_echo)
    assert n.nominated_node_for(b_echo) == "node-2"
    n.forget(b_echo)
    assert n.nominated_node_for(b_echo) == ""
