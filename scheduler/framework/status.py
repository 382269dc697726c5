"""Status: the result of running a plugin, as in ``pkg/scheduler/framework/interface.go``.

Plugins return ``None`` for success, the way Go plugins return a nil ``*Status``: the common path then
allocates nothing. ``Status.is_success(None)`` and friends accept both forms.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field


class Code(enum.IntEnum):
    """Upstream's framework.Code values, same order and meaning."""

    Success = 0
    # An internal error: the pod is retried with backoff, no plugin is blamed.
    Error = 1
    # The node does not fit now; preemption or a cluster event may change that.
    Unschedulable = 2
    # The node can never fit this pod; preemption is pointless for it.
    UnschedulableAndUnresolvable = 3
    # Permit: the pod waits (gang scheduling and the like).
    Wait = 4
    # The plugin has nothing to do for this pod; later phases of the same plugin are skipped.
    Skip = 5
    # The pod waits for something outside the scheduler; requeued only by that plugin's events.
    Pending = 6


@dataclass(slots=True)
class Status:
    code: Code = Code.Success
    reasons: list[str] = field(default_factory=list)
    # The plugin that produced the status; the runner fills it in.
    plugin: str = ""
    error: BaseException | None = None

    @classmethod
    def unschedulable(cls, *reasons: str, resolvable: bool = True) -> Status:
        code = Code.Unschedulable if resolvable else Code.UnschedulableAndUnresolvable
        return cls(code, list(reasons))

    @classmethod
    def as_error(cls, error: BaseException | str) -> Status:
        if isinstance(error, str):
            return cls(Code.Error, [error], error=RuntimeError(error))
        return cls(Code.Error, [str(error) or type(error).__name__], error=error)

    @classmethod
    def skip(cls) -> Status:
        return cls(Code.Skip)

    def with_plugin(self, plugin: str) -> Status:
        if not self.plugin:
            self.plugin = plugin
        return self

    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_rejection(self) -> bool:
        return self.code in (Code.Unschedulable, Code.UnschedulableAndUnresolvable, Code.Pending)

    def __str__(self) -> str:
        text = self.message()
        return f"{self.code.name}: {text}" if text else self.code.name


def is_success(status: Status | None) -> bool:
    return status is None or status.code is Code.Success


def code_of(status: Status | None) -> Code:
    return Code.Success if status is None else status.code


def distinct_statuses(statuses: Collection[Status]) -> list[tuple[Status, int]]:
    """Each distinct Status object of ``statuses`` with how many times it occurs.

    The batch Filter path shares one Status object among the nodes a plugin rejects alike, so a
    diagnosis of thousands of nodes holds a handful of objects: counting them by identity (at C speed)
    lets callers look at each distinct one once instead of once per node."""
    by_id = dict(zip(map(id, statuses), statuses, strict=True))
    return [(by_id[key], count) for key, count in Counter(map(id, statuses)).items()]
