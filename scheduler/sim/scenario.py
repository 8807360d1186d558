"""Simulator scenarios (DESIGN §5.4): what a scenario holds.

A scenario is a cluster, a list of streaming jobs with their inputs, and timed events. Loading
one from YAML, with every key validated, is :mod:`scheduler.sim.scenario_file`; the format is
documented in ``docs/simulator.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler.sim.scenario_keys import ScenarioError
from scheduler.sim.types import SimJobSpec

__all__ = [
    "BurstSpec",
    "ClusterSpec",
    "CollectorOutage",
    "Event",
    "ExecutorSpec",
    "InputSpec",
    "Interference",
    "JobScenario",
    "NodeLoss",
    "NodeSpec",
    "Scenario",
    "ScenarioError",
    "SkewChange",
    "SlowExecutor",
    "Spike",
    "StageSpec",
    "StateSpec",
    "TraceSpec",
]

# --------------------------------------------------------------------------------------------
# The data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeSpec:
    name: str
    cores: float
    memory_mb: float


@dataclass(frozen=True)
class ClusterSpec:
    nodes: tuple[NodeSpec, ...]
    executor_start_delay_s: float = 10.0
    """Seconds from placing an executor on a node to its running tasks."""
    placement: str = "first-fit"
    """``first-fit`` (nodes in order) or ``spread`` (the node with the most free cores)."""


@dataclass(frozen=True)
class ExecutorSpec:
    initial: int = 2
    min: int = 1
    max: int = 40
    cores: int = 1
    memory_mb: int = 2048


@dataclass(frozen=True)
class StageSpec:
    """One stage of a micro-batch's plan."""

    name: str
    cost_ms: float
    """Core-milliseconds per row entering the stage."""
    partitions: int
    """Tasks of the stage: at most this many cores work on it at once."""
    selectivity: float = 1.0
    """Rows passed on per row entering."""
    inputs: tuple[str, ...] = ()
    """Stages whose output this stage reads; empty: the source."""


@dataclass(frozen=True)
class StateSpec:
    """State a job keeps between batches, reloaded whenever its executors change."""

    size_mb: float
    reload_mb_per_s: float

    @property
    def reload_s(self) -> float:
        return self.size_mb / self.reload_mb_per_s


@dataclass(frozen=True)
class TraceSpec:
    file: Path
    scale: float = 1.0
    """Rows per trace event: the rate is ``events_per_minute * scale / 60`` rows per second."""
    compression: float = 60.0
    """Simulated seconds per trace minute (60: real time; 10: the paper's hour in 10 min)."""
    start_minute: int = 0
    jitter_minutes: int = 0
    """Per seed and job, ``start_minute`` moves on by a whole number of minutes drawn uniformly
    in ``[0, jitter_minutes)``; 0: no draw, the trace starts at ``start_minute``."""


@dataclass(frozen=True)
class BurstSpec:
    """Short random bursts on top of an input, drawn per seed and job: burst starts form a
    Poisson process of ``per_hour`` a simulated hour, counted from the end of the previous
    burst (bursts do not overlap); during one the rate is multiplied by ``factor``."""

    per_hour: float
    factor: float
    duration_s: float


@dataclass(frozen=True)
class InputSpec:
    """Exactly one of: a constant rate, steps, a trace (rates in rows per second)."""

    constant: float | None = None
    steps: tuple[tuple[float, float], ...] = ()
    """``(t_s, rate)`` pairs, the first at t = 0."""
    trace: TraceSpec | None = None
    bursts: BurstSpec | None = None
    """Random bursts on top of whichever rate is given (``None``: none, no draws)."""


@dataclass(frozen=True)
class JobScenario:
    name: str
    tenant: str
    priority: float
    slo: Mapping[str, Any]
    executors: ExecutorSpec
    shape: str
    stages: tuple[StageSpec, ...]
    input: InputSpec
    trigger_interval_s: float = 1.0
    batch_overhead_ms: float = 350.0
    max_rows_per_batch: float | None = None
    """Spark's ``maxOffsetsPerTrigger``: rows a batch takes at most (``None``: all waiting)."""
    state: StateSpec | None = None
    noise: float = 0.05
    """Standard deviation of the log of the per-batch compute-time factor."""
    arrives_at_s: float = 0.0

    @property
    def max_parallelism(self) -> int:
        return max(s.partitions for s in self.stages)

    def sim_spec(self) -> SimJobSpec:
        ex = self.executors
        return SimJobSpec(
            name=self.name,
            tenant=self.tenant,
            priority=self.priority,
            slo=self.slo,
            initial_executors=ex.initial,
            min_executors=ex.min,
            max_executors=ex.max,
            cores_per_executor=ex.cores,
            memory_mb=ex.memory_mb,
            arrives_at_s=self.arrives_at_s,
        )


@dataclass(frozen=True)
class Spike:
    """Input rate times ``factor`` during [at_s, at_s + duration_s) for ``jobs`` (empty: all)."""

    at_s: float
    duration_s: float
    factor: float
    jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Interference:
    """Executors on ``nodes`` (empty: all) run ``factor`` times slower during the interval."""

    at_s: float
    duration_s: float
    factor: float
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeLoss:
    """``nodes`` fail at ``at_s`` (their executors are lost); back after ``duration_s`` if set."""

    at_s: float
    nodes: tuple[str, ...]
    duration_s: float | None = None


@dataclass(frozen=True)
class CollectorOutage:
    """No reports from ``jobs`` (empty: all) for windows overlapping the interval."""

    at_s: float
    duration_s: float
    jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class SlowExecutor:
    """One executor of ``job`` (its oldest running one) runs ``factor`` times slower during the
    interval: a fault of that executor alone. An executor that replaces it is healthy."""

    at_s: float
    duration_s: float
    factor: float
    job: str


@dataclass(frozen=True)
class SkewChange:
    """During the interval (to the end without ``duration_s``), the largest partition of
    ``job``'s stage ``stage`` holds ``factor`` times the mean partition's rows (a hot key)."""

    at_s: float
    factor: float
    job: str
    stage: str
    duration_s: float | None = None


Event = Spike | Interference | NodeLoss | CollectorOutage | SlowExecutor | SkewChange


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    duration_s: float
    cluster: ClusterSpec
    jobs: tuple[JobScenario, ...]
    events: tuple[Event, ...] = ()
    scheduler_start_s: float = 900.0
    """The scheduler starts acting here (the paper's 900 s of vanilla running)."""
    sub_window_s: float = 10.0
    seed: int = 1
    path: Path | None = None
    history_days: float = 0.0
    """Days of each job's input recorded before the scenario starts (in trace days for a trace
    played faster than real time), from which its input forecasts are fitted; 0: none."""
    task_figures: bool = False
    """The simulated agents report per-executor and per-stage task figures (for diagnosis)."""

    def specs(self) -> tuple[SimJobSpec, ...]:
        return tuple(j.sim_spec() for j in self.jobs)

    def job(self, name: str) -> JobScenario:
        for job in self.jobs:
            if job.name == name:
                return job
        raise KeyError(name)

    def with_nodes(self, count: int) -> Scenario:
        """The same scenario on ``count`` nodes shaped like its first (for cluster-size sweeps)."""
        first = self.cluster.nodes[0]
        nodes = tuple(NodeSpec(f"node-{i:02d}", first.cores, first.memory_mb) for i in range(count))
        cluster = dataclasses.replace(self.cluster, nodes=nodes)
        return dataclasses.replace(self, name=f"{self.name}@{count}", cluster=cluster)
