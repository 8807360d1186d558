"""The cluster-view port."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from scheduler.core.model import ClusterView


@dataclass(frozen=True)
class Holding:
    """Executors a job holds (or has been told to hold), for sources that cannot see them."""

    job_id: str
    executors: int
    cores_per_executor: int
    memory_mb: int


class ClusterSource(Protocol):
    name: str

    def view(self, holdings: Sequence[Holding]) -> ClusterView:
        """The cluster now. ``holdings`` are the registry's targets, used where the source
        has no live view of the executors."""
        ...
