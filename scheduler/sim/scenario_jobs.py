"""Parsing the ``jobs`` and ``events`` of a scenario document (for
:mod:`scheduler.sim.scenario_file`).

Shapes are stage templates: per stage a relative cost per row entering it, a selectivity and its
inputs. A shape's costs are scaled so that one source row costs ``cost_ms_per_row`` core-ms over
the whole plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scheduler.core.slo import SLOError, slo_from_mapping, validate_priority, validate_slo
from scheduler.sim.inputs import find_trace, load_trace
from scheduler.sim.scenario import (
    BurstSpec,
    CollectorOutage,
    Event,
    ExecutorSpec,
    InputSpec,
    Interference,
    JobScenario,
    NodeLoss,
    SkewChange,
    SlowExecutor,
    Spike,
    StageSpec,
    StateSpec,
    TraceSpec,
)
from scheduler.sim.scenario_keys import (
    Fields,
    ScenarioError,
    as_number,
    check_name,
    deep_merge,
    names,
    sequence,
)

# (stage, relative cost per row entering it, selectivity, inputs)
Template = tuple[tuple[str, float, float, tuple[str, ...]], ...]

SHAPES: dict[str, Template] = {
    "linear": (
        ("source", 1.0, 1.0, ()),
        ("map", 2.0, 1.0, ("source",)),
        ("sink", 2.0, 1.0, ("map",)),
    ),
    "diamond": (
        ("source", 1.0, 1.0, ()),
        ("left", 2.0, 1.0, ("source",)),
        ("right", 2.0, 1.0, ("source",)),
        ("join", 1.0, 1.0, ("left", "right")),
    ),
    "star": (
        ("source", 1.0, 1.0, ()),
        ("hub", 3.0, 1.0, ("source",)),
        ("out-a", 1.0, 1.0, ("hub",)),
        ("out-b", 1.0, 1.0, ("hub",)),
    ),
    "pageload": (
        ("read", 1.0, 1.0, ()),
        ("transform", 2.0, 1.0, ("read",)),
        ("filter", 1.0, 0.5, ("transform",)),
        ("join", 4.0, 1.0, ("filter",)),
        ("aggregate", 4.0, 1.0, ("join",)),
    ),
}

JOB_KEYS = (
    "name",
    "tenant",
    "priority",
    "slo",
    "executors",
    "shape",
    "stages",
    "cost_ms_per_row",
    "partitions",
    "trigger_interval_s",
    "batch_overhead_ms",
    "max_rows_per_batch",
    "state",
    "noise",
    "input",
    "arrives_at_s",
    "count",
)
_SLO_KEYS = ("juice", "latency_ms", "latency_stat", "utility")
_UTILITY_KEYS = (
    "shape",
    "juice_zero_at",
    "latency_zero_at_ms",
    "step_low",
    "juice_points",
    "latency_points",
)


# --------------------------------------------------------------------------------------------
# Jobs
# --------------------------------------------------------------------------------------------


def parse_jobs(document: Mapping[str, Any], base_dir: Path) -> tuple[JobScenario, ...]:
    defaults = document.get("job_defaults") or {}
    Fields(defaults, "job_defaults", JOB_KEYS)  # unknown keys are named where they are
    if "name" in defaults or "count" in defaults:
        raise ScenarioError("job_defaults", "name and count belong to each job")
    raw_jobs = document.get("jobs")
    if raw_jobs is None:
        raise ScenarioError("jobs", "missing")
    jobs: list[JobScenario] = []
    for i, raw in enumerate(sequence(raw_jobs, "jobs", non_empty=True)):
        key = f"jobs[{i}]"
        if not isinstance(raw, Mapping):
            raise ScenarioError(key, "must be a mapping")
        jobs.extend(parse_job(deep_merge(defaults, raw), key, base_dir))
    seen: set[str] = set()
    for job in jobs:
        if job.name in seen:
            raise ScenarioError("jobs", f"duplicate job name {job.name!r}")
        seen.add(job.name)
    return tuple(jobs)


def parse_job(data: Mapping[str, Any], key: str, base_dir: Path) -> list[JobScenario]:
    """One ``jobs`` entry: ``count`` identical jobs named ``<name>-1`` … (just ``<name>``
    when ``count`` is 1)."""
    f = Fields(data, key, JOB_KEYS)
    name = check_name(f.string("name"), f.key("name"))
    count = f.integer("count", 1, minimum=1)
    priority = f.number("priority")
    try:
        validate_priority(priority)
    except SLOError as exc:
        raise ScenarioError(f.key("priority"), exc.message) from exc
    shape, stages = _parse_stages(f)
    base = JobScenario(
        name=name,
        tenant=check_name(f.string("tenant", "default"), f.key("tenant")),
        priority=priority,
        slo=_parse_slo(f.child("slo"), f.key("slo")),
        executors=_parse_executors(f.raw("executors", {}), f.key("executors")),
        shape=shape,
        stages=stages,
        input=_parse_input(f.child("input"), f.key("input"), base_dir),
        trigger_interval_s=f.number("trigger_interval_s", 1.0, minimum=0.05),
        batch_overhead_ms=f.number("batch_overhead_ms", 350.0, minimum=0.0),
        max_rows_per_batch=(
            f.number("max_rows_per_batch", positive=True) if f.has("max_rows_per_batch") else None
        ),
        state=_parse_state(f.raw("state", None), f.key("state")),
        noise=f.number("noise", 0.05, minimum=0.0, maximum=1.0),
        arrives_at_s=f.number("arrives_at_s", 0.0, minimum=0.0),
    )
    if count == 1:
        return [base]
    return [dataclasses.replace(base, name=f"{name}-{n}") for n in range(1, count + 1)]


def _parse_slo(data: Any, key: str) -> Mapping[str, Any]:
    f = Fields(data, key, _SLO_KEYS)
    if f.has("utility"):
        Fields(f.child("utility"), f.key("utility"), _UTILITY_KEYS)
    try:
        validate_slo(slo_from_mapping(data))
    except SLOError as exc:
        field = exc.field.removeprefix("slo")
        raise ScenarioError(f"{key}{field}", exc.message) from exc
    except (TypeError, ValueError) as exc:
        raise ScenarioError(key, str(exc)) from exc
    return dict(data)


def _parse_executors(data: Any, key: str) -> ExecutorSpec:
    f = Fields(data, key, ("initial", "min", "max", "cores", "memory_mb"))
    low = f.integer("min", 1, minimum=0)
    high = f.integer("max", 40, minimum=1)
    if high < low:
        raise ScenarioError(f.key("max"), f"must be at least min ({low})")
    initial = f.integer("initial", max(low, min(2, high)), minimum=0)
    if not low <= initial <= high:
        raise ScenarioError(f.key("initial"), f"must be within [min, max] = [{low}, {high}]")
    return ExecutorSpec(
        initial=initial,
        min=low,
        max=high,
        cores=f.integer("cores", 1, minimum=1),
        memory_mb=f.integer("memory_mb", 2048, minimum=1),
    )


def _parse_state(data: Any, key: str) -> StateSpec | None:
    if data is None:
        return None
    f = Fields(data, key, ("size_mb", "reload_mb_per_s"))
    return StateSpec(
        size_mb=f.number("size_mb", minimum=0.0),
        reload_mb_per_s=f.number("reload_mb_per_s", positive=True),
    )


# --------------------------------------------------------------------------------------------
# Stages
# --------------------------------------------------------------------------------------------


def _parse_stages(f: Fields) -> tuple[str, tuple[StageSpec, ...]]:
    """The job's shape name (``custom`` for explicit stages) and its stages."""
    partitions = f.integer("partitions", 48, minimum=1)
    if f.has("stages"):
        for conflicting in ("cost_ms_per_row", "shape"):
            if f.has(conflicting):
                raise ScenarioError(f.key(conflicting), "give either stages or a shape, not both")
        return "custom", _explicit_stages(f.child("stages"), f.key("stages"), partitions)
    shape = f.choice("shape", tuple(SHAPES), "linear")
    cost = f.number("cost_ms_per_row", 1.0, positive=True)
    return shape, shape_stages(shape, cost, partitions)


def shape_stages(shape: str, cost_ms_per_row: float, partitions: int) -> tuple[StageSpec, ...]:
    """A shape's stages, costs scaled so one source row costs ``cost_ms_per_row`` in all."""
    template = SHAPES[shape]
    stages = tuple(StageSpec(n, rel, partitions, sel, ins) for n, rel, sel, ins in template)
    total = sum(w for w in row_weights(stages))
    return tuple(
        StageSpec(
            s.name, s.cost_ms * cost_ms_per_row / total, s.partitions, s.selectivity, s.inputs
        )
        for s in stages
    )


def row_weights(stages: Sequence[StageSpec]) -> list[float]:
    """Core-ms per *source* row of each stage: rows entering it per source row × its cost."""
    out_rows: dict[str, float] = {}
    weights: list[float] = []
    for stage in stages:
        rows_in = sum(out_rows[i] for i in stage.inputs) if stage.inputs else 1.0
        out_rows[stage.name] = rows_in * stage.selectivity
        weights.append(rows_in * stage.cost_ms)
    return weights


def _explicit_stages(data: Any, key: str, partitions: int) -> tuple[StageSpec, ...]:
    stages: list[StageSpec] = []
    for i, raw in enumerate(sequence(data, key, non_empty=True)):
        f = Fields(raw, f"{key}[{i}]", ("name", "cost_ms", "selectivity", "partitions", "inputs"))
        name = check_name(f.string("name"), f.key("name"))
        if any(s.name == name for s in stages):
            raise ScenarioError(f.key("name"), f"duplicate stage {name!r}")
        default_inputs = [stages[-1].name] if stages else []
        inputs = names(
            f.raw("inputs", default_inputs), f.key("inputs"), [s.name for s in stages], "stage"
        )
        stages.append(
            StageSpec(
                name=name,
                cost_ms=f.number("cost_ms", minimum=0.0),
                partitions=f.integer("partitions", partitions, minimum=1),
                selectivity=f.number("selectivity", 1.0, minimum=0.0),
                inputs=inputs,
            )
        )
    return tuple(stages)


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def _parse_input(data: Any, key: str, base_dir: Path) -> InputSpec:
    f = Fields(data, key, ("constant", "steps", "trace", "bursts"))
    given = [k for k in ("constant", "steps", "trace") if f.has(k)]
    if len(given) != 1:
        raise ScenarioError(key, "needs exactly one of constant, steps, trace")
    bursts = _parse_bursts(f.child("bursts"), f.key("bursts")) if f.has("bursts") else None
    if given[0] == "constant":
        return InputSpec(constant=f.number("constant", minimum=0.0), bursts=bursts)
    if given[0] == "steps":
        return InputSpec(steps=_parse_steps(f.child("steps"), f.key("steps")), bursts=bursts)
    trace = _parse_trace(f.child("trace"), f.key("trace"), base_dir)
    return InputSpec(trace=trace, bursts=bursts)


def _parse_bursts(data: Any, key: str) -> BurstSpec:
    f = Fields(data, key, ("per_hour", "factor", "duration_s"))
    return BurstSpec(
        per_hour=f.number("per_hour", positive=True),
        factor=f.number("factor", positive=True),
        duration_s=f.number("duration_s", positive=True),
    )


def _parse_steps(data: Any, key: str) -> tuple[tuple[float, float], ...]:
    steps: list[tuple[float, float]] = []
    for i, item in enumerate(sequence(data, key, non_empty=True)):
        k = f"{key}[{i}]"
        pair = sequence(item, k)
        if len(pair) != 2:
            raise ScenarioError(k, "must be a pair [t_s, rate]")
        t, rate = as_number(pair[0], f"{k}[0]"), as_number(pair[1], f"{k}[1]")
        if rate < 0:
            raise ScenarioError(f"{k}[1]", "must be >= 0")
        if (i == 0 and t != 0) or (steps and t <= steps[-1][0]):
            raise ScenarioError(f"{k}[0]", "steps start at 0 and their times must increase")
        steps.append((t, rate))
    return tuple(steps)


def _parse_trace(data: Any, key: str, base_dir: Path) -> TraceSpec:
    f = Fields(data, key, ("file", "scale", "compression", "start_minute", "jitter_minutes"))
    name = f.string("file")
    path = find_trace(name, base_dir)
    if path is None:
        raise ScenarioError(f.key("file"), f"no trace file {name!r} (relative to {base_dir})")
    try:
        minutes = len(load_trace(path))
    except ValueError as exc:
        raise ScenarioError(f.key("file"), str(exc)) from exc
    start = f.integer("start_minute", 0, minimum=0)
    if start >= minutes:
        raise ScenarioError(f.key("start_minute"), f"beyond the trace's {minutes} minutes")
    return TraceSpec(
        file=path,
        scale=f.number("scale", 1.0, positive=True),
        compression=f.number("compression", 60.0, positive=True),
        start_minute=start,
        jitter_minutes=f.integer("jitter_minutes", 0, minimum=0),
    )


# --------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------

_EVENT_KEYS: dict[str, tuple[str, ...]] = {
    "spike": ("at_s", "duration_s", "factor", "jobs"),
    "interference": ("at_s", "duration_s", "factor", "nodes"),
    "node_loss": ("at_s", "nodes", "duration_s"),
    "collector_outage": ("at_s", "duration_s", "jobs"),
    "slow_executor": ("at_s", "duration_s", "factor", "job"),
    "skew": ("at_s", "duration_s", "factor", "job", "stage"),
}


def parse_events(
    data: Any, jobs: Mapping[str, JobScenario], node_names: set[str]
) -> tuple[Event, ...]:
    events: list[Event] = []
    for i, raw in enumerate(sequence(data, "events")):
        key = f"events[{i}]"
        if not isinstance(raw, Mapping) or len(raw) != 1:
            kinds = ", ".join(_EVENT_KEYS)
            raise ScenarioError(key, f"must be a mapping with one key, the event kind ({kinds})")
        kind, body = next(iter(raw.items()))
        if kind not in _EVENT_KEYS:
            raise ScenarioError(
                f"{key}.{kind}", f"unknown event (allowed: {', '.join(_EVENT_KEYS)})"
            )
        f = Fields(body, f"{key}.{kind}", _EVENT_KEYS[kind])
        if kind in ("slow_executor", "skew"):
            events.append(_job_event(kind, f, jobs))
        else:
            events.append(_event(kind, f, set(jobs), node_names))
    return tuple(sorted(events, key=lambda e: e.at_s))


def _job_event(kind: str, f: Fields, jobs: Mapping[str, JobScenario]) -> Event:
    """A fault of one job: a slow executor, or a skewed stage."""
    at = f.number("at_s", minimum=0.0)
    job_name = f.raw("job")
    if not isinstance(job_name, str) or job_name not in jobs:
        raise ScenarioError(f.key("job"), f"must name one of the scenario's jobs, not {job_name!r}")
    job = jobs[job_name]
    factor = f.number("factor", positive=True)
    if factor < 1:
        raise ScenarioError(f.key("factor"), "must be >= 1")
    if kind == "slow_executor":
        return SlowExecutor(at, f.number("duration_s", positive=True), factor, job.name)
    stages = {s.name: s for s in job.stages}
    stage = f.raw("stage", job.stages[-1].name)
    if stage not in stages:
        raise ScenarioError(
            f.key("stage"), f"no stage {stage!r} in job {job.name!r} (it has {', '.join(stages)})"
        )
    if factor > stages[stage].partitions:
        raise ScenarioError(
            f.key("factor"), f"must be at most the stage's {stages[stage].partitions} partitions"
        )
    duration = f.number("duration_s", positive=True) if f.has("duration_s") else None
    return SkewChange(at, factor, job.name, stage, duration)


def _event(kind: str, f: Fields, job_names: set[str], node_names: set[str]) -> Event:
    at = f.number("at_s", minimum=0.0)
    if kind == "node_loss":
        duration = f.number("duration_s", positive=True) if f.has("duration_s") else None
        nodes = names(f.child("nodes"), f.key("nodes"), node_names, "node")
        return NodeLoss(at, nodes, duration)
    duration = f.number("duration_s", positive=True)
    if kind == "collector_outage":
        return CollectorOutage(
            at, duration, names(f.raw("jobs", []), f.key("jobs"), job_names, "job")
        )
    factor = f.number("factor", positive=True)
    if kind == "spike":
        return Spike(
            at, duration, factor, names(f.raw("jobs", []), f.key("jobs"), job_names, "job")
        )
    if factor < 1:
        raise ScenarioError(f.key("factor"), "must be >= 1 (a slowdown)")
    return Interference(
        at, duration, factor, names(f.raw("nodes", []), f.key("nodes"), node_names, "node")
    )
