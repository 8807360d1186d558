"""The simulated world: determinism, placement, the micro-batch model, events, traces."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler.core.latency import BatchLatency, percentile_latency_ms
from scheduler.core.slo import slo_from_mapping
from scheduler.core.window import window_metrics
from scheduler.sim.agent_reports import tail_quantiles
from scheduler.sim.scenario_file import load_scenario
from scheduler.sim.world import SimWorld, build_world

from .world_kit import document, metrics_at, reports_of, run, scenario, world


def test_same_seed_same_reports_other_seed_other_noise() -> None:
    scn = scenario(job={"noise": 0.1})
    first, again, other = (run(world(scn, seed), 300) for seed in (7, 7, 8))
    assert first == again
    assert first != other


def test_build_world_follows_the_protocol() -> None:
    w = build_world(load_scenario("spike"), 1)
    assert [s.name for s in w.specs()] == ["a", "b"]
    assert w.capacity_cores(w.start) == 64
    assert w.advance(w.start + timedelta(seconds=5)) == []
    assert len(w.cluster().nodes) == 4


def test_reports_parse_and_measure() -> None:
    w = world(scenario())
    reports = reports_of(run(w, 120), "a")
    assert len(reports) == 12
    r = reports[-1]
    assert r.duration_s == 10 and r.executors == 4 and r.max_parallelism == 16
    assert len(r.batches) == 10 and r.latency_ms is not None
    m = metrics_at(w, reports, "a", 120)
    # 2000 rows/s at 1 core-ms per row on 4 cores: half of each 1 s trigger is compute
    assert m.capacity == pytest.approx(0.5, rel=0.01)
    assert m.juice == pytest.approx(1.0, abs=1e-9)
    assert m.latency_ms == pytest.approx(350 + 500 + 500, rel=0.01)


def test_executors_wait_for_room_and_start_after_the_delay() -> None:
    scn = scenario(cluster={"nodes": 2, "cores": 4, "executor_start_delay_s": 15})
    w = world(scn, targets={"a": 10})
    nodes = w.cluster().nodes
    assert [n.cores_requested for n in nodes] == [4, 4]  # first fit, two left pending
    out = run(w, 20)
    assert [doc["executors"] for _, doc in out] == [0, 8]
    assert out[0][1]["batches"] == []
    w.set_target("a", 6)  # removes the two pending ones and two placed ones
    assert sum(n.cores_requested for n in w.cluster().nodes) == 6
    w.set_target("a", 8)
    out = run(w, 40)
    assert [doc["executors"] for _, doc in out] == [6, 8]


def test_spread_placement_fills_the_emptiest_node() -> None:
    scn = scenario(cluster={"nodes": 2, "cores": 4, "placement": "spread"})
    w = world(scn, targets={"a": 3})
    assert sorted(n.cores_requested for n in w.cluster().nodes) == [1, 2]


def test_memory_limits_placement() -> None:
    scn = scenario(cluster={"nodes": 1, "cores": 8, "memory_mb": 5000})
    w = world(scn, targets={"a": 4})
    (node,) = w.cluster().nodes
    assert node.cores_requested == 2 and node.memory_requested_mb == 4096


def test_node_loss_kills_executors_that_come_back_when_room_exists() -> None:
    events = [{"node_loss": {"at_s": 30, "nodes": ["node-00"], "duration_s": 40}}]
    scn = scenario(cluster={"nodes": 2, "cores": 4}, events=events)
    w = world(scn, targets={"a": 6})
    out = run(w, 50)
    assert [n.ready for n in w.cluster().nodes] == [False, True]
    assert w.cluster().nodes[1].cores_requested == 4
    out += run(w, 100)
    running = [doc["executors"] for _, doc in out]
    # first fit: 4 on node-00, 2 on node-01. node-00 fails at 30 s: two of its executors fit
    # on node-01 (running at 35 s), two wait until node-00 is back at 70 s (running at 75 s)
    assert running == [6, 6, 6, 4, 4, 4, 4, 6, 6, 6]
    assert w.capacity_cores(w.start + timedelta(seconds=50)) == 4
    assert w.capacity_cores(w.start + timedelta(seconds=80)) == 8


def test_a_congested_job_falls_behind() -> None:
    # 6000 rows/s need 6 cores; 4 executors fall behind; batches capped at 5 s of input
    scn = scenario(job={"input": {"constant": 6000}, "max_rows_per_batch": 30000})
    w = world(scn)
    reports = reports_of(run(w, 600), "a")
    early = metrics_at(w, reports, "a", 300)
    late = metrics_at(w, reports, "a", 600)
    assert early.juice is not None and early.juice < 0.75
    assert late.juice is not None and late.juice < 0.75
    assert early.capacity is not None and early.capacity > 0.9
    assert early.latency_ms is not None and late.latency_ms is not None
    assert late.latency_ms > early.latency_ms + 100_000  # the wait grows with the backlog
    assert (late.backlog_rows or 0) > (early.backlog_rows or 0)
    assert w.true_utility("a", 4, w.start) == 0.0


def latency_with(executors: int) -> float:
    scn = scenario(job={"partitions": 8, "input": {"constant": 3000}})
    w = world(scn, targets={"a": executors})
    reports = reports_of(run(w, 180), "a")
    latency = metrics_at(w, reports, "a", 180).latency_ms
    assert latency is not None
    return latency


def test_more_executors_lower_latency_until_the_partitions_run_out() -> None:
    latencies = [latency_with(n) for n in (4, 6, 8, 12)]
    assert latencies[0] > latencies[1] > latencies[2]
    assert latencies[3] == pytest.approx(latencies[2], rel=1e-6)
    # the floor: overhead + compute on 8 cores + half the trigger
    assert latencies[2] == pytest.approx(350 + 3000 / 8 + 500, rel=1e-3)


def test_true_utility_is_the_noiseless_steady_state() -> None:
    w = world(scenario(job={"slo": {"latency_ms": 1000}}))
    reports = reports_of(run(w, 120), "a")
    measured = metrics_at(w, reports, "a", 120).utility
    assert w.true_utility("a", 4, w.start) == pytest.approx(measured, rel=1e-3)
    assert w.true_utility("a", 4, w.start) < w.true_utility("a", 8, w.start) < 10
    assert w.true_utility("a", 0, w.start) == 0.0


def test_below_the_per_batch_floor_no_allocation_meets_the_slo() -> None:
    scn = load_scenario("single-congested")
    w = build_world(scn, 1)
    strict = scn.job("slo-800-1x")
    best = max(w.true_utility(strict.name, n, w.start) for n in range(1, 61))
    assert best < strict.priority
    lax = scn.job("slo-1400-1x")
    assert w.true_utility(lax.name, 25, w.start) == lax.priority


def first_batch_after(
    w: SimWorld, out: Sequence[tuple[str, Mapping[str, Any]]], job: str, t_s: float
) -> float:
    """Duration (s) of the first batch of ``job`` that starts at or after ``t_s``."""
    for name, doc in out:
        for b in doc["batches"] if name == job else ():
            if (b["start"] - w.start).total_seconds() >= t_s:
                return float((b["end"] - b["start"]).total_seconds())
    raise AssertionError("no batch")


def test_a_stateful_job_pauses_to_reload_its_state_when_executors_change() -> None:
    doc = document()
    stateless = doc["jobs"][0]
    stateful = {**stateless, "name": "s", "state": {"size_mb": 1000, "reload_mb_per_s": 250}}
    doc["jobs"].append(stateful)
    w = world(scenario(**{k: v for k, v in doc.items() if k != "jobs"}, jobs=doc["jobs"]))
    run(w, 60)
    for job in ("a", "s"):
        w.set_target(job, 6)
    out = run(w, 120)  # the new executors run from 65 s, when a batch starts
    plain, paused = (first_batch_after(w, out, job, 65) for job in ("a", "s"))
    assert paused == pytest.approx(plain + 4.0, abs=0.05)


def test_a_collector_outage_silences_reports() -> None:
    w = world(scenario(events=[{"collector_outage": {"at_s": 25, "duration_s": 30}}]))
    out = run(w, 100)
    ends = [(doc["window_end"] - w.start).total_seconds() for _, doc in out]
    assert ends == [10, 20, 70, 80, 90, 100]  # windows overlapping 25-55 s are silent


def test_interference_slows_the_nodes_executors() -> None:
    events = [{"interference": {"at_s": 60, "duration_s": 60, "factor": 1.5}}]
    w = world(scenario(events=events))
    reports = reports_of(run(w, 180), "a")
    before, during, after = (metrics_at(w, reports, "a", t).capacity for t in (60, 120, 180))
    assert before == pytest.approx(0.5, abs=0.02)
    assert during == pytest.approx(0.75, rel=0.02)
    assert after == pytest.approx(0.5, rel=0.01)
    assert w.cluster().nodes[0].cpu_used == pytest.approx(2.0, rel=0.02)


def test_an_input_spike_multiplies_the_rate() -> None:
    events = [{"spike": {"at_s": 30, "duration_s": 20, "factor": 3.0}}]
    out = run(world(scenario(events=events)), 60)
    assert [doc["sources"][0]["arrived_rows"] for _, doc in out] == [
        20000,
        20000,
        20000,
        60000,
        60000,
        20000,
    ]


def test_steps_input() -> None:
    out = run(world(scenario(job={"input": {"steps": [[0, 100], [15, 300]]}})), 30)
    assert [doc["sources"][0]["arrived_rows"] for _, doc in out] == [1000, 2000, 3000]


def test_the_trace_input_follows_the_csv(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("# test\nminute,events\n0,60\n1,120\n2,0\n3,30\n")
    trace = {"file": "t.csv", "scale": 2.0, "compression": 20, "start_minute": 1}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(document(job={"input": {"trace": trace}})))
    out = run(world(load_scenario(path)), 80)
    arrived = [doc["sources"][0]["arrived_rows"] for _, doc in out]
    # minute m lasts 20 s at events(m) * 2 / 60 rows/s, from minute 1, wrapping around
    assert arrived == pytest.approx([40, 40, 0, 0, 10, 10, 20, 20])


def test_arriving_jobs_report_from_their_arrival() -> None:
    doc = document()
    late = {**doc["jobs"][0], "name": "late", "arrives_at_s": 30}
    w = world(scenario(jobs=[doc["jobs"][0], late]))
    out = run(w, 60)
    assert [name for name, _ in out].count("late") == 3


def test_window_metrics_see_the_exact_tail_latency() -> None:
    scn = scenario(job={"slo": {"latency_ms": 2000, "latency_stat": "p99"}})
    w = world(scn)
    reports = reports_of(run(w, 120), "a")
    spec = scn.jobs[0]
    now = w.start + timedelta(seconds=120)
    m = window_metrics(reports, slo_from_mapping(spec.slo), spec.priority, now)
    assert m is not None and m.latency_ms == pytest.approx(350 + 500 + 990, rel=0.01)


def test_tail_quantiles_match_the_production_estimator() -> None:
    rng = random.Random(3)
    for _ in range(200):
        parts = []
        for _ in range(rng.randint(1, 12)):
            low = rng.uniform(0.1, 5.0)
            parts.append((rng.uniform(1, 1000), low, low + rng.choice([0.0, rng.uniform(0, 3)])))
        total = sum(p[0] for p in parts)
        expected = [
            percentile_latency_ms([BatchLatency(r, lo, hi) for r, lo, hi in parts], q)
            for q in (95.0, 99.0)
        ]
        got = tail_quantiles(parts, total, (0.95, 0.99))
        assert got == pytest.approx(expected, abs=1e-6)
