"""Status writers that act as controllers beside the scheduler (PodGroup status). Each is installed with
the informers it needs, started once the scheduler leads, and stopped at shutdown."""

from __future__ import annotations

from typing import Protocol


class Controller(Protocol):
    def start(self) -> None:
        """Begin writing (the scheduler leads now)."""
        ...

    async def stop(self) -> None:
        """Stop writing; bounded, part of an orderly shutdown."""
        ...
