"""The simulator's named data and the world port the runner drives.

The runner (``scheduler/sim/runner.py``) runs the production loop (:mod:`scheduler.round.loop`)
on an in-memory round store, a virtual clock, and a :class:`World`: the simulated cluster and jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from scheduler.core.model import ClusterView


@dataclass(frozen=True)
class SimJobSpec:
    """A job as a tenant registers it (the body of ``POST /v1/jobs``), and when it arrives."""

    name: str
    tenant: str
    priority: float
    slo: Mapping[str, Any]
    """The SLO document of DESIGN §5.1 (``{"latency_ms": 60, "juice": 1.0, ...}``)."""
    initial_executors: int
    min_executors: int
    max_executors: int
    cores_per_executor: int = 1
    memory_mb: int = 2048
    arrives_at_s: float = 0.0
    """Seconds after the start of the simulation."""


class World(Protocol):
    """The simulated cluster and its streaming jobs, advanced by the runner's virtual clock."""

    start: datetime
    """Simulated time zero."""

    def specs(self) -> Sequence[SimJobSpec]:
        """Every job of the scenario, with its arrival time."""
        ...

    def advance(self, now: datetime) -> Sequence[tuple[str, Mapping[str, Any]]]:
        """Run the world up to ``now``; return ``(job name, report)`` for each report window
        that ended since the last call (DESIGN §5.1 report documents, one per job per
        sub-window). Jobs in a collector outage return none."""
        ...

    def set_target(self, job: str, executors: int) -> None:
        """The job's agent applies a new target: executors are requested (placed after the
        start delay, pending while nothing fits) or removed (idle ones first)."""
        ...

    def replace_executors(self, job: str, executor_ids: Sequence[str]) -> Sequence[str]:
        """The job's agent kills the named executors; a new one is requested for each, on
        another node where one has room. Returns the ids it found and replaced."""
        ...

    def cluster(self) -> ClusterView:
        """Nodes now: allocatable cores and memory, and what placed executors hold."""
        ...

    def true_utility(self, job: str, executors: int, now: datetime) -> float:
        """The job's steady-state utility at ``now``'s input rate if it held ``executors``
        running executors (the true model, for the oracle; no noise)."""
        ...

    def true_rate(self, job: str, now: datetime) -> float:
        """The job's input rate at ``now`` (rows per second, no noise)."""
        ...

    def capacity_cores(self, now: datetime) -> float:
        """Cores of the ready nodes at ``now`` (for the oracle)."""
        ...


@dataclass(frozen=True)
class RoundSample:
    """The cluster after one round. ``t_s`` counts from the moment the scheduler starts acting
    (negative during the warm-up before it)."""

    t_s: float
    state: str
    action: str
    job: str | None
    reason: str
    total_utility: float
    max_utility: float
    oracle_utility: float | None
    utilities: Mapping[str, float]
    executors: Mapping[str, int]
    oracle_utilities: Mapping[str, float] | None = None
    """Each present job's utility in the oracle's allocation (``None`` without the oracle)."""
    latencies: Mapping[str, float | None] = field(default_factory=dict)
    """Each job's latest measured latency in ms (its last one when the newest window has none)."""
    running: Mapping[str, int] = field(default_factory=dict)
    """The executors each job's newest report says it ran (what its agent saw, not the target)."""


@dataclass(frozen=True)
class ActionEvent:
    t_s: float
    kind: str
    job: str
    from_executors: int
    to_executors: int
    reason: str


@dataclass(frozen=True)
class EventMark:
    """A moment the world changed under the scheduler (an input spike starting or ending, a
    node lost or back, a job arriving, ...), for recovery times. ``t_s`` counts from the
    scheduler's start, at the moment the change takes effect."""

    kind: str
    t_s: float
    subject: tuple[str, ...] = ()
    """The jobs or nodes it concerns; empty: all."""


@dataclass(frozen=True)
class SimResult:
    scenario: str
    policy: str
    seed: int
    sim_seconds: float
    """Simulated seconds from the scheduler's start to the end of the run."""
    round_interval_s: float
    jobs: tuple[SimJobSpec, ...]
    samples: tuple[RoundSample, ...]
    actions: tuple[ActionEvent, ...]
    executor_core_seconds: float
    """Cores held by placed executors, integrated over the scheduler's part of the run."""
    wall_seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())
    events: tuple[EventMark, ...] = ()
    """The scenario's events and arrivals during the run, in time order."""
    policy_params: Mapping[str, Any] = field(default_factory=dict)
    """The policy settings the run was given (empty: the policy's defaults)."""
    model_errors: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Per job, how far the policy's model of the job was from the truth, when the policy
    measures it (empty otherwise); the summary passes it through as each job's
    ``model_error``."""
