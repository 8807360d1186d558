"""The realizer port."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from scheduler.core.model import Change


class Realizer(Protocol):
    name: str

    def apply(self, changes: Sequence[Change]) -> Sequence[Change]:
        """Carry out ``changes``; return those that took effect (their targets are then stored
        as the jobs' allocations in force)."""
        ...
