"""DecisionStore.finish's shortcut for a binding that succeeded (no lock, nothing moved) against the
locked path it skips: random sequences of filings and finishings leave both stores alike."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from scheduler.explain.record import (
    BIND_FAILED,
    BINDING,
    BOUND,
    ERROR,
    UNSCHEDULABLE,
    WAITING_ON_PERMIT,
    AttemptRecord,
)
from scheduler.explain.store import _PENDING_OUTCOMES, DecisionStore


class LockedStore(DecisionStore):
    """``finish`` always through the lock: the path before the shortcut."""

    def finish(self, record: AttemptRecord, outcome: str, message: str = "") -> None:
        key = record.pod
        with self._lock:
            record.outcome = outcome
            if message:
                record.message = message
            history, source = self._recent.get(key), self._recent
            if history is None:
                history, source = self._pending.get(key), self._pending
            if not history or history[-1] is not record:
                return
            if outcome in _PENDING_OUTCOMES:
                if source is self._recent:
                    del self._recent[key]
                    self._put(self._pending, key, history, self._pending_limit)
            elif source is self._pending:
                del self._pending[key]
                self._put(self._recent, key, history, self._recent_limit)


FILED = st.sampled_from([BINDING, WAITING_ON_PERMIT, UNSCHEDULABLE, ERROR])
# ("file", pod, outcome) or ("finish", index of an earlier filing, bound, message)
STEP = st.one_of(
    st.tuples(st.just("file"), st.integers(0, 5), FILED),
    st.tuples(st.just("finish"), st.integers(0, 40), st.booleans(), st.sampled_from(["", "conflict"])),
)


def _state(store: DecisionStore) -> tuple[object, ...]:
    def view(target: object) -> list[tuple[str, list[tuple[int, str, str]]]]:
        return [
            (key, [(r.attempt, r.outcome, r.message) for r in history])
            for key, history in target.items()  # type: ignore[attr-defined]
        ]

    return view(store._pending), view(store._recent)


@given(st.lists(STEP, max_size=60), st.integers(1, 4), st.integers(1, 4), st.integers(1, 3))
def test_finishing_with_the_shortcut_leaves_the_store_as_the_locked_path(
    steps: list[tuple[object, ...]], pending: int, recent: int, attempts: int
) -> None:
    stores = [
        DecisionStore(pending_pods=pending, recent_pods=recent, attempts_per_pod=attempts),
        LockedStore(pending_pods=pending, recent_pods=recent, attempts_per_pod=attempts),
    ]
    filed: list[list[AttemptRecord]] = [[], []]
    for number, step in enumerate(steps):
        for store, records in zip(stores, filed, strict=True):
            if step[0] == "file":
                _, pod, outcome = step
                record = AttemptRecord(f"ns/p{pod}", "u", "prof", number, 0.0, outcome=str(outcome))
                records.append(record)
                store.file(record)
            elif records:
                _, index, bound, message = step
                record = records[int(index) % len(records)]  # type: ignore[call-overload]
                store.finish(record, BOUND if bound else BIND_FAILED, str(message))
        assert _state(stores[0]) == _state(stores[1])
    for key in {r.pod for r in filed[0]}:
        assert stores[0].get_json(key) == stores[1].get_json(key)
