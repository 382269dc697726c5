"""Synchronous preemption: how scheduler-plugins v0.34.7's preemption plugins (CapacityScheduling,
PreemptionToleration) run kube-scheduler v1.34's ``Evaluator`` (``NewEvaluator(..., false)``, async
preemption off).

The decision (eligibility, dry run, best candidate) is made on the event loop; when there are victims,
the PostFilter result is a coroutine the scheduling cycle awaits while the Executor evicts them
(``preempt_now``: its writer threads, then the informer showing the deletions). The next pod's cycle
therefore meets the victims gone and this preemptor nominated, as upstream's next cycle does; with the
eviction left running behind the cycle, several preemptors of one burst each counted the same victims
as still present and evicted more than were needed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scheduler.framework import PodInfo, Status
from scheduler.framework.handle import PreemptionExecutorHandle
from scheduler.framework.interface import PostFilterAwaitable
from scheduler.framework.status import Code
from scheduler.preemption.evaluator import Candidate, select_candidate

PostFilterResult = tuple[str | None, Status | None]


def decide_then_evict(
    plugin: str,
    found: Sequence[Candidate] | PostFilterResult,
    executor: PreemptionExecutorHandle | None,
    pod: PodInfo,
    evicted: Callable[[Candidate], None] | None = None,
) -> PostFilterResult | PostFilterAwaitable:
    """``found`` is the Evaluator's ``candidates`` answer. Returns the PostFilter result when nothing
    is to be evicted (or there is no Executor: a plugin test gets the decision alone), else the
    coroutine that evicts the best candidate's victims and then nominates its node. ``evicted`` runs
    after the deletions are seen, before the result is returned."""
    if isinstance(found, tuple):
        return found
    best = select_candidate(found)
    if best is None or not best.name:
        return None, Status(Code.Unschedulable, ["no candidate node for preemption"])
    if executor is None:
        return best.name, None
    return _evict(plugin, executor, pod, best, evicted)


async def _evict(
    plugin: str,
    executor: PreemptionExecutorHandle,
    pod: PodInfo,
    best: Candidate,
    evicted: Callable[[Candidate], None] | None,
) -> PostFilterResult:
    status = await executor.preempt_now(pod, best.name, best.victims, plugin)
    if status is not None:
        return None, status
    if evicted is not None:
        evicted(best)
    return best.name, None


def refuse_outside_cycle(plugin: str, outcome: PostFilterResult | PostFilterAwaitable) -> PostFilterResult:
    """``post_filter`` of a synchronous-preemption plugin, for a caller without the event loop: the
    decision when there is nothing to evict, else an error rather than a preemption it cannot await."""
    if isinstance(outcome, tuple):
        return outcome
    outcome.close()
    return None, Status.as_error(f"{plugin} preempts only within the scheduling cycle")
