"""The realizer port."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from scheduler.core.model import Change, Replacement


class Realizer(Protocol):
    name: str

    def apply(self, changes: Sequence[Change]) -> Sequence[Change]:
        """Carry out ``changes``; return those that took effect (their targets are then stored
        as the jobs' allocations in force)."""
        ...


@runtime_checkable
class Replacer(Protocol):
    """A realizer that can also replace a job's executors (stop them; the cluster manager
    starts a new one for each)."""

    def replace(self, replacements: Sequence[Replacement]) -> Sequence[Replacement]:
        """Carry out ``replacements``; return those that took effect."""
        ...
