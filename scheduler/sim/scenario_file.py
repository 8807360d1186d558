"""Loading a simulator scenario (DESIGN §5.4) from YAML.

Built-in scenarios live in ``scheduler/sim/scenarios/*.yaml``; :func:`load_scenario` takes a
built-in name or a path. Every key is validated; a :class:`ScenarioError` names the offending key
path, e.g. ``jobs[2].input.trace.scale: must be > 0``. Jobs and events are parsed in
:mod:`scheduler.sim.scenario_jobs`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from scheduler.sim.scenario import (
    ClusterSpec,
    Event,
    Interference,
    NodeSpec,
    Scenario,
    SkewChange,
    SlowExecutor,
)
from scheduler.sim.scenario_jobs import parse_events, parse_jobs
from scheduler.sim.scenario_keys import Fields, ScenarioError, check_name, sequence

SCENARIO_DIR = Path(__file__).parent / "scenarios"


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
    "history_days",
    "task_figures",
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
    top = Fields(data, "", _TOP_KEYS)
    duration = top.number("duration_s", positive=True)
    sub_window = top.number("sub_window_s", 10.0, positive=True)
    start = top.number("scheduler_start_s", 900.0, minimum=0.0)
    if start >= duration:
        raise ScenarioError("scheduler_start_s", "must be before duration_s")
    cluster = _parse_cluster(top.child("cluster"), "cluster")
    jobs = parse_jobs(data, base_dir or SCENARIO_DIR)
    node_names = {n.name for n in cluster.nodes}
    events = parse_events(top.raw("events", []), {j.name: j for j in jobs}, node_names)
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
        history_days=top.number("history_days", 0.0, minimum=0.0, maximum=35.0),
        task_figures=_task_figures(top, events),
    )


def _task_figures(top: Fields, events: tuple[Event, ...]) -> bool:
    """Given, or true when an event makes tasks uneven (they cost the simulation time)."""
    value = top.raw("task_figures", None)
    if value is None:
        return any(isinstance(e, SlowExecutor | SkewChange | Interference) for e in events)
    if not isinstance(value, bool):
        raise ScenarioError("task_figures", "must be true or false")
    return value


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
