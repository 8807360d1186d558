"""Simulator scenarios (DESIGN §5.4): what a scenario holds, and loading one from YAML.

A scenario is a cluster, a list of streaming jobs with their inputs, and timed events. Built-in
scenarios live in ``scheduler/sim/scenarios/*.yaml``; :func:`load_scenario` takes a built-in name
or a path. Every key is validated; a :class:`ScenarioError` names the offending key path, e.g.
``jobs[2].input.trace.scale: must be > 0``. The format is documented in ``docs/simulator.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scheduler.sim.scenario_keys import Fields, ScenarioError, check_name, sequence
from scheduler.sim.types import SimJobSpec

__all__ = [
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
    "Spike",
    "StageSpec",
    "StateSpec",
    "TraceSpec",
    "builtin_scenarios",
    "load_scenario",
    "parse_scenario",
]

SCENARIO_DIR = Path(__file__).parent / "scenarios"


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


@dataclass(frozen=True)
class InputSpec:
    """Exactly one of: a constant rate, steps, a trace (rates in rows per second)."""

    constant: float | None = None
    steps: tuple[tuple[float, float], ...] = ()
    """``(t_s, rate)`` pairs, the first at t = 0."""
    trace: TraceSpec | None = None


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


Event = Spike | Interference | NodeLoss | CollectorOutage


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


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def builtin_scenarios() -> list[str]:
    """Names of the scenarios shipped with the package."""
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))


def load_scenario(name_or_path: str | Path) -> Scenario:
    """A built-in scenario by name, or the scenario in a YAML file."""
    text = str(name_or_path)
    path = Path(text)
    if not path.suffix and not path.exists() and (SCENARIO_DIR / f"{text}.yaml").exists():
        path = SCENARIO_DIR / f"{text}.yaml"
    if not path.is_file():
        known = ", ".join(builtin_scenarios())
        raise ScenarioError("scenario", f"no built-in or file named {text!r} (built-ins: {known})")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ScenarioError("scenario", f"{path}: not valid YAML: {exc}") from exc
    return parse_scenario(data, base_dir=path.parent, default_name=path.stem, path=path)


_TOP_KEYS = (
    "name",
    "description",
    "duration_s",
    "scheduler_start_s",
    "sub_window_s",
    "seed",
    "cluster",
    "job_defaults",
    "jobs",
    "events",
)


def parse_scenario(
    data: Any,
    *,
    base_dir: Path | None = None,
    default_name: str = "scenario",
    path: Path | None = None,
) -> Scenario:
    """Validate a scenario document (the parsed YAML) and build the :class:`Scenario`."""
    from scheduler.sim.scenario_jobs import parse_events, parse_jobs

    top = Fields(data, "", _TOP_KEYS)
    duration = top.number("duration_s", positive=True)
    sub_window = top.number("sub_window_s", 10.0, positive=True)
    start = top.number("scheduler_start_s", 900.0, minimum=0.0)
    if start >= duration:
        raise ScenarioError("scheduler_start_s", "must be before duration_s")
    cluster = _parse_cluster(top.child("cluster"), "cluster")
    jobs = parse_jobs(data, base_dir or SCENARIO_DIR)
    node_names = {n.name for n in cluster.nodes}
    events = parse_events(top.raw("events", []), {j.name for j in jobs}, node_names)
    return Scenario(
        name=check_name(top.string("name", default_name), "name"),
        description=top.string("description", ""),
        duration_s=duration,
        cluster=cluster,
        jobs=jobs,
        events=events,
        scheduler_start_s=start,
        sub_window_s=sub_window,
        seed=int(top.number("seed", 1, integer=True)),
        path=path,
    )


def _parse_cluster(data: Any, key: str) -> ClusterSpec:
    f = Fields(data, key, ("nodes", "cores", "memory_mb", "executor_start_delay_s", "placement"))
    cores = f.number("cores", 16.0, positive=True)
    memory = f.number("memory_mb", 65536.0, positive=True)
    raw_nodes = f.raw("nodes", None)
    if raw_nodes is None:
        raise ScenarioError(f.key("nodes"), "missing (a count, or a list of nodes)")
    if isinstance(raw_nodes, bool) or not isinstance(raw_nodes, int | list):
        raise ScenarioError(f.key("nodes"), "must be a count or a list of nodes")
    if isinstance(raw_nodes, int):
        if raw_nodes < 1:
            raise ScenarioError(f.key("nodes"), "must be >= 1")
        nodes = tuple(NodeSpec(f"node-{i:02d}", cores, memory) for i in range(raw_nodes))
    else:
        nodes = tuple(
            _parse_node(item, f"{f.key('nodes')}[{i}]", i, cores, memory)
            for i, item in enumerate(sequence(raw_nodes, f.key("nodes"), non_empty=True))
        )
        names = [n.name for n in nodes]
        for i, name in enumerate(names):
            if name in names[:i]:
                raise ScenarioError(f"{f.key('nodes')}[{i}].name", f"duplicate node {name!r}")
    placement = f.choice("placement", ("first-fit", "spread"), "first-fit")
    delay = f.number("executor_start_delay_s", 10.0, minimum=0.0)
    return ClusterSpec(nodes=nodes, executor_start_delay_s=delay, placement=placement)


def _parse_node(data: Any, key: str, index: int, cores: float, memory: float) -> NodeSpec:
    f = Fields(data, key, ("name", "cores", "memory_mb"))
    return NodeSpec(
        name=check_name(f.string("name", f"node-{index:02d}"), f.key("name")),
        cores=f.number("cores", cores, positive=True),
        memory_mb=f.number("memory_mb", memory, positive=True),
    )
