"""The scheduling cycle's side of decision recording: a handful of calls at the points where an
attempt's outcome becomes known. Everything here runs on the event loop; readers (the HTTP server's
threads) go through the DecisionStore's lock.

Cheap by construction: ``begin`` makes the attempt's record (a Trace) and the cycle hands it
references; when the attempt is handed to binding or fails, the record condenses them (the counts,
the top-K rows with their names and per-plugin scores, read while Score's arrays are still in the
CPU caches) and is filed with one lock acquisition.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import TRACE_KEY
from scheduler.explain.misses import gist, nearest_misses
from scheduler.explain.notes import chosen_node_notes
from scheduler.explain.record import (
    BIND_FAILED,
    BINDING,
    BOUND,
    ERROR,
    UNSCHEDULABLE,
    WAITING_ON_PERMIT,
    AttemptRecord,
    Trace,
    summary,
)
from scheduler.explain.store import DecisionStore
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.fit_error import FitError
from scheduler.framework.runtime import Framework
from scheduler.framework.types import PodInfo

# CycleState key of the attempt's record once filed (the binding result carries the CycleState back).
RECORD_KEY = "explain/record"

# The pod annotation with the decision summary (``--annotate-decisions``), and its size bound.
ANNOTATION = "py-scheduler.io/decision"
ANNOTATION_MAX_BYTES = 1024

# Writes one annotation: (namespace/name, uid, value). The EventRecorder's writer pool sends it.
Annotator = Callable[[str, str, str], None]


class DecisionRecorder:
    def __init__(
        self,
        store: DecisionStore | None = None,
        *,
        enabled: bool = True,
        clock: Callable[[], float] = time.time,
        annotate_profiles: frozenset[str] = frozenset(),
        annotator: Annotator | None = None,
    ) -> None:
        self.store = store if store is not None else DecisionStore()
        self.enabled = enabled
        # Profiles whose pods get the summary annotation (off unless asked for; needs recording on).
        self.annotate_profiles = annotate_profiles if annotator is not None else frozenset()
        self._annotator = annotator
        self._clock = clock
        # The attempt of the cycle now running: its failures reach the cycle's _fail without a state.
        self._current: Trace | None = None

    def begin(self, fwk: Framework, pod: PodInfo, state: CycleState, attempt: int) -> None:
        if not self.enabled:
            return
        trace = Trace(pod.key, pod.uid, fwk.profile_name, attempt, self._clock())
        trace.attach(state)
        self._current = trace

    def unschedulable(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        err: FitError,
        nominated: str | None,
        message: str,
    ) -> str:
        """Finish a FitError attempt; returns the nearest-miss gist for the FailedScheduling event."""
        trace = self._take(pod.key)
        if trace is None:
            return ""
        diagnosis = err.diagnosis
        record = trace.record(UNSCHEDULABLE, message=message)
        if not diagnosis.pre_filter_msg and diagnosis.node_to_status:
            record.nearest_misses, record.misses_probed = nearest_misses(
                fwk, state, pod, snapshot, diagnosis.node_to_status
            )
        record.nominated_node = nominated or ""
        self.store.file(record)
        if record.profile in self.annotate_profiles:
            self._annotate(record)
        return gist(record.nearest_misses)

    def assumed(self, state: CycleState, node_name: str, *, waiting: bool) -> None:
        """The pod passed Permit (or waits there) and goes to the binding pool."""
        trace = self._current
        if trace is None or state.get(TRACE_KEY) is not trace:
            return
        self._current = None
        record = trace.record(WAITING_ON_PERMIT if waiting else BINDING, node_name)
        record.node_notes = chosen_node_notes(state, node_name)
        state.write(RECORD_KEY, record)
        self.store.file(record)

    def failed(self, key: str, message: str, *, error: bool) -> None:
        """Any other failure of the running cycle (Reserve, Permit, a plugin error)."""
        trace = self._take(key)
        if trace is not None:
            self.store.file(trace.record(ERROR if error else UNSCHEDULABLE, message=message))

    def binding_done(self, state: CycleState, *, bound: bool, message: str = "") -> None:
        record: AttemptRecord | None = state.get(RECORD_KEY)
        if record is None:
            return
        self.store.finish(record, BOUND if bound else BIND_FAILED, message)
        if bound and record.profile in self.annotate_profiles:
            self._annotate(record)

    def _annotate(self, record: AttemptRecord) -> None:
        assert self._annotator is not None
        self._annotator(record.pod, record.uid, summary(record, ANNOTATION_MAX_BYTES))

    def _take(self, key: str) -> Trace | None:
        trace, self._current = self._current, None
        return trace if trace is not None and trace.pod == key else None
