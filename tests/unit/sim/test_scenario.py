"""Scenario files: built-ins, validation errors that name the key, traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.sim.inputs import SHARED_TRACES
from scheduler.sim.scenario import CollectorOutage, NodeLoss
from scheduler.sim.scenario_file import (
    ScenarioError,
    builtin_scenarios,
    load_scenario,
    parse_scenario,
)

from .world_kit import document

BUILTINS = {
    "single-congested",
    "priority-greedy",
    "hybrid",
    "tail-latency",
    "spike",
    "diurnal",
    "production",
    "fluctuation",
    "stateful",
    "scale-jobs",
    "scale-nodes",
    "collector-outage",
}
BEYOND_THE_PAPER = {
    "tiers-spike",
    "tiers-overload",
    "bursty",
    "tiers-diurnal",
    "flash-crowd",
    "stateful-bursty",
    "tiers-diurnal-history",
    "tiers-diurnal-break",
    "nasa-week",
    "tiers-slow-executor",
    "tiers-slow-node",
    "tiers-skew",
}


def test_every_builtin_loads_and_names_its_experiment() -> None:
    # The paper's experiments, `demo` (the short scenario `henge demo` runs), and scenarios
    # beyond the paper (tests/unit/sim/test_scenarios_beyond_the_paper.py).
    assert set(builtin_scenarios()) == {*BUILTINS, "demo", *BEYOND_THE_PAPER}
    for name in BUILTINS:
        scn = load_scenario(name)
        assert scn.name == name
        assert "Fig. 2." in scn.description or "Table 2." in scn.description
        assert scn.scheduler_start_s == 900
        assert scn.jobs and scn.cluster.nodes


def test_a_builtin_loads_from_its_path_too() -> None:
    path = Path(__file__).parents[3] / "scheduler" / "sim" / "scenarios" / "spike.yaml"
    assert load_scenario(path) == load_scenario("spike").__class__(
        **{**load_scenario("spike").__dict__, "path": path}
    )


def test_job_count_and_defaults_expand() -> None:
    scn = load_scenario("hybrid")
    assert [j.name for j in scn.jobs] == [f"t-{i}" for i in range(1, 11)]
    assert all(j.slo == {"juice": 1.0, "latency_ms": 1400} for j in scn.jobs)


def test_priority_greedy_has_room_for_every_job_at_its_paper_size() -> None:
    scn = load_scenario("priority-greedy")
    assert sorted(j.priority for j in scn.jobs) == [10, 20, 30, 40, 50, 60, 70, 80, 90]
    cores = sum(n.cores for n in scn.cluster.nodes)
    assert cores >= 20 * len(scn.jobs)  # eq. 2.4 takes each from 5 to about 20 executors


def test_collector_outage_has_an_outage_after_the_scheduler_starts() -> None:
    scn = load_scenario("collector-outage")
    (outage,) = [e for e in scn.events if isinstance(e, CollectorOutage)]
    assert outage.at_s > scn.scheduler_start_s and outage.duration_s > 0


def test_the_diurnal_builtin_uses_the_packaged_trace() -> None:
    scn = load_scenario("diurnal")
    trace = scn.jobs[0].input.trace
    assert trace is not None and trace.file.name == "nasa-http-1995-5d.csv"
    assert "scheduler/sim/traces" in trace.file.as_posix()
    assert scn.duration_s == 48 * 3600 and len(scn.jobs) == 10


def bad(changes: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(document(**changes))
    return str(info.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"colour": "red"}, "colour: unknown key"),
        ({"job": {"colour": "red"}}, "jobs[0].colour: unknown key"),
        ({"duration_s": "long"}, "duration_s: must be a number"),
        ({"duration_s": -5}, "duration_s: must be > 0"),
        (
            {"cluster": {"executor_start_delay_s": -1}},
            "cluster.executor_start_delay_s: must be >= 0",
        ),
        ({"cluster": {"nodes": "many"}}, "cluster.nodes: must be a count or a list"),
        ({"job": {"priority": 0}}, "jobs[0].priority: must be a finite number > 0"),
        ({"job": {"executors": {"initial": 40}}}, "jobs[0].executors.initial: must be within"),
        ({"job": {"executors": {"cores": 1.5}}}, "jobs[0].executors.cores: must be a whole number"),
        ({"job": {"slo": {"juice": 2}}}, "jobs[0].slo.juice: must be in (0, 1]"),
        ({"job": {"slo": {"latency_stat": "p90"}}}, "jobs[0].slo:"),
        ({"job": {"shape": "spiral"}}, "jobs[0].shape: must be one of"),
        ({"job": {"input": {"constant": -1}}}, "jobs[0].input.constant: must be >= 0"),
        ({"job": {"input": {"steps": [[5, 10]]}}}, "jobs[0].input.steps[0][0]"),
        ({"job": {"trigger_interval_s": 0}}, "jobs[0].trigger_interval_s: must be >= 0.05"),
        ({"events": [{"quake": {"at_s": 5}}]}, "events[0].quake: unknown event"),
        (
            {"events": [{"node_loss": {"at_s": 5, "nodes": ["node-99"]}}]},
            "events[0].node_loss.nodes[0]: unknown node",
        ),
        ({"events": [{"spike": {"at_s": 5, "factor": 2}}]}, "events[0].spike.duration_s: missing"),
        (
            {"events": [{"spike": {"at_s": 5, "duration_s": 1, "factor": 2, "jobs": ["zz"]}}]},
            "events[0].spike.jobs[0]: unknown job",
        ),
    ],
)
def test_errors_name_the_key(changes: dict[str, Any], message: str) -> None:
    assert message in bad(changes)


def test_a_missing_key_is_named() -> None:
    doc = document()
    del doc["jobs"][0]["slo"]
    with pytest.raises(ScenarioError, match=r"^jobs\[0\]\.slo: missing"):
        parse_scenario(doc)


def test_trace_errors_name_the_key(tmp_path: Path) -> None:
    trace = {"file": "nope.csv", "scale": 1}
    assert "jobs[0].input.trace.file: no trace file 'nope.csv'" in bad(
        {"job": {"input": {"trace": trace}}}
    )
    (tmp_path / "t.csv").write_text("minute,events\n0,5\n1,6\n")
    doc = document(job={"input": {"trace": {"file": "t.csv", "scale": 0}}})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.input\.trace\.scale: must be > 0"):
        load_scenario(path)
    (tmp_path / "gap.csv").write_text("minute,events\n0,5\n2,6\n")
    doc = document(job={"input": {"trace": {"file": "gap.csv"}}})
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.input\.trace\.file: .*consecutive"):
        load_scenario(path)


def test_trace_paths_are_relative_to_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("# comment\nminute,events\n0,5\n1,6\n")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(document(job={"input": {"trace": {"file": "t.csv"}}})))
    trace = load_scenario(path).jobs[0].input.trace
    assert trace is not None and trace.file == tmp_path / "t.csv"


def test_the_full_nasa_trace_is_found_in_the_shared_folder() -> None:
    if not (SHARED_TRACES / "nasa-http-1995.csv").exists():
        pytest.skip("no ../shared/traces here")
    scn = parse_scenario(document(job={"input": {"trace": {"file": "nasa-http-1995.csv"}}}))
    trace = scn.jobs[0].input.trace
    assert trace is not None and trace.file.parent == SHARED_TRACES


def test_unknown_scenario_lists_the_builtins() -> None:
    with pytest.raises(ScenarioError, match=r"no built-in or file named 'nope'.*diurnal"):
        load_scenario("nope")


def test_events_parse() -> None:
    scn = load_scenario("spike")
    assert [e.at_s for e in scn.events] == [3600, 7200]
    doc = document(events=[{"node_loss": {"at_s": 60, "nodes": ["node-01"], "duration_s": 30}}])
    (loss,) = parse_scenario(doc).events
    assert loss == NodeLoss(60, ("node-01",), 30)


def test_explicit_stages() -> None:
    stages = [
        {"name": "scan", "cost_ms": 0.5, "partitions": 8},
        {"name": "filter", "cost_ms": 1.0, "selectivity": 0.25},
        {"name": "agg", "cost_ms": 2.0, "partitions": 4},
    ]
    doc = document()
    for key in ("shape", "cost_ms_per_row", "partitions"):
        del doc["jobs"][0][key]
    doc["jobs"][0]["stages"] = stages
    job = parse_scenario(doc).jobs[0]
    assert job.shape == "custom"
    assert [s.partitions for s in job.stages] == [8, 48, 4]
    assert job.stages[2].inputs == ("filter",)
    assert job.max_parallelism == 48
    doc["jobs"][0]["shape"] = "linear"
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.shape: give either stages or a shape"):
        parse_scenario(doc)


def test_the_demo_scenario_loads_and_starts_the_scheduler_at_once() -> None:
    scn = load_scenario("demo")
    assert scn.scheduler_start_s == 0
    assert {j.tenant for j in scn.jobs} == {"ads", "search", "payments"}
    assert any(j.arrives_at_s > 0 for j in scn.jobs)
