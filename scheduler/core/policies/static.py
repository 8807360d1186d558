"""``static``: the allocation each job registered with, forever (DESIGN §4).

The reference point of the benchmarks: whatever the load does, no executor is added or removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from scheduler.core.model import ClusterState, Plan, Snapshot
from scheduler.core.policies.base import BaselinePolicy
from scheduler.core.policies.rounds import jobs_in_order


@dataclass(frozen=True)
class StaticSettings:
    """The static policy has no settings; any parameter given to it is rejected."""


@dataclass(frozen=True)
class StaticState:
    """Nothing to remember."""


class StaticPolicy(BaselinePolicy[StaticSettings, StaticState]):
    """Never changes anything."""

    name = "static"
    settings_type = StaticSettings
    state_type = StaticState

    def decide(
        self, snapshot: Snapshot, state: StaticState, now: datetime
    ) -> tuple[Plan, StaticState]:
        jobs = jobs_in_order(snapshot)
        plan = Plan.no_change(
            "static policy: allocations never change",
            ClusterState.CONVERGED,
            sum(job.utility for job in jobs),
            sum(job.priority for job in jobs),
        )
        return plan, state
