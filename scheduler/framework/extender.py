"""What the framework and its plugins know of scheduler extenders (upstream's ``framework/extender.go``).

The framework hands the configured extenders to PostFilter plugins (DefaultPreemption asks them about
its candidates) without knowing how they are reached; ``scheduler.extender`` implements this protocol
over HTTP. Keeping the protocol here is what lets ``framework`` never import ``extender``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from scheduler.framework.types import PodInfo


class ExtenderError(Exception):
    """A failed extender call; ``str()`` is the message users see in FailedScheduling events."""


@dataclass(slots=True)
class Victims:
    """``Victims`` (k8s.io/kube-scheduler extender/v1): the pods to evict on one node and how many PDBs
    that violates."""

    pods: list[Mapping[str, Any]] = field(default_factory=list)
    num_pdb_violations: int = 0


class Extenders(Protocol):
    """The configured extenders, as preemption consults them."""

    def __bool__(self) -> bool: ...

    def preempts_for(self, pod: PodInfo) -> bool:
        """Whether preemption for ``pod`` has an extender to ask (one with a preemptVerb interested in it)."""
        ...

    async def process_preemption(
        self,
        pod: PodInfo,
        victims: Mapping[str, Victims],
        pods_on_node: Callable[[str], Iterable[Mapping[str, Any]] | None],
    ) -> dict[str, Victims]:
        """Each interested preempting extender may drop candidate nodes or change their victims.
        Raises ExtenderError when a non-ignorable extender fails."""
        ...
