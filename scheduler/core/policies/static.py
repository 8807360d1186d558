"""``static``: the allocation each job registered with, forever (DESIGN §4).

The reference point of the benchmarks: whatever the load does, no executor is added or removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scheduler.core.model import ClusterState, Plan, Snapshot
from scheduler.core.policies.baseline import jobs_in_order
from scheduler.core.policy import JSONDict, build_settings, register_policy

NAME = "static"


@dataclass(frozen=True)
class StaticSettings:
    """The static policy has no settings; any parameter given to it is rejected."""


@dataclass(frozen=True)
class StaticState:
    """Nothing to remember."""


class StaticPolicy:
    """Never changes anything."""

    name: str = NAME

    def __init__(self, settings: StaticSettings | None = None) -> None:
        self.settings = settings or StaticSettings()

    def initial_state(self) -> StaticState:
        return StaticState()

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

    def dump_state(self, state: StaticState) -> JSONDict:
        return {}

    def load_state(self, data: JSONDict) -> StaticState:
        return StaticState()


def _factory(params: Mapping[str, Any]) -> StaticPolicy:
    return StaticPolicy(build_settings(StaticSettings, params))


register_policy(NAME, _factory)
