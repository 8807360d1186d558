"""``henge bench calibrate`` without Spark: the scenario file against the real run's settings, the
record's round trip, and the comparison on records whose answer is known."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from scheduler.bench.calibrate import (
    SCENARIO,
    calibrate,
    check_scenario,
    compare,
    from_settle,
    load_record,
    rows,
    simulated_run,
)
from scheduler.bench.contention_report import job_figures, save_record
from scheduler.bench.spark_contention import LONG, SUB_WINDOW_S, ContentionRun
from scheduler.sim.scenario import Spike
from scheduler.sim.scenario_file import load_scenario
from tests.integration.test_cli import henge, ok


@pytest.fixture(scope="module")
def simulated() -> ContentionRun:
    return simulated_run(LONG, load_scenario(SCENARIO), seed=1)


def test_the_scenario_file_is_the_real_runs_timeline_and_inputs() -> None:
    scenario = load_scenario(SCENARIO)
    check_scenario(scenario, LONG)
    start = scenario.scheduler_start_s
    (spike,) = scenario.events
    assert isinstance(spike, Spike) and spike.jobs == (LONG.top.name,)
    assert spike.at_s == start + LONG.settle_s and spike.duration_s == LONG.spike_s
    assert scenario.duration_s == start + LONG.settle_s + LONG.spike_s + LONG.after_s
    assert spike.factor * LONG.top.rate == LONG.top.spike_rate
    assert scenario.sub_window_s == SUB_WINDOW_S
    for tier in LONG.tiers:
        job = scenario.job(tier.name)
        assert job.input.constant == tier.rate
        assert job.trigger_interval_s == LONG.trigger_s
        assert {s.partitions for s in job.stages} == {LONG.partitions}


def test_a_scenario_of_another_run_is_refused() -> None:
    scenario = load_scenario(SCENARIO)
    other = dataclasses.replace(scenario.jobs[0], priority=1.0)
    with pytest.raises(ValueError, match="priority or executor bounds"):
        check_scenario(dataclasses.replace(scenario, jobs=(other, *scenario.jobs[1:])), LONG)
    with pytest.raises(ValueError, match="not the tiers"):
        check_scenario(dataclasses.replace(scenario, jobs=scenario.jobs[1:]), LONG)
    (spike,) = scenario.events
    later = dataclasses.replace(spike, at_s=spike.at_s + 60)
    with pytest.raises(ValueError, match="the spike is not"):
        check_scenario(dataclasses.replace(scenario, events=(later,)), LONG)
    faster = dataclasses.replace(
        scenario.jobs[1], input=dataclasses.replace(scenario.jobs[1].input, constant=200.0)
    )
    with pytest.raises(ValueError, match="input is not a constant"):
        check_scenario(dataclasses.replace(scenario, jobs=(scenario.jobs[0], faster,
                                                            *scenario.jobs[2:])), LONG)  # fmt: skip


def test_the_simulated_run_moves_an_executor_down_the_tiers_and_back(
    simulated: ContentionRun,
) -> None:
    moves = [(a.job, a.from_executors, a.to_executors) for a in simulated.actions]
    assert ("bronze", 2, 1) in moves and ("gold", 1, 2) in moves
    during = simulated.during(simulated.spike_start_s, simulated.spike_end_s)
    assert max(s.spark["gold"] for s in during) == 2
    assert all(s.spark["silver"] == 2 for s in simulated.samples)
    assert simulated.samples[-1].spark == {"gold": 1, "silver": 2, "bronze": 2}


def _with_warm_up(run: ContentionRun, seconds: float) -> ContentionRun:
    """``run`` as a real record: ``seconds`` of warm-up before the base load (earning nothing,
    on other executors), so times start that much earlier."""
    first = run.samples[0]
    warm = tuple(
        dataclasses.replace(
            first,
            t_s=float(t),
            spark=dict.fromkeys(first.spark, 1),
            utility=dict.fromkeys(first.utility, 0.0),
        )
        for t in range(int(seconds))
    )
    shifted = tuple(dataclasses.replace(s, t_s=s.t_s + seconds) for s in run.samples)
    return dataclasses.replace(
        run,
        samples=warm + shifted,
        spike_start_s=run.spike_start_s + seconds,
        spike_end_s=run.spike_end_s + seconds,
        actions=tuple(dataclasses.replace(a, t_s=a.t_s + seconds) for a in run.actions),
    )


def test_a_real_record_is_compared_from_its_base_load_on(simulated: ContentionRun) -> None:
    real = _with_warm_up(simulated, 75.0)
    assert from_settle(real).samples == simulated.samples
    figures = compare(real, [simulated])
    for job in figures["jobs"].values():
        assert job["real"] == job["simulated"] and job["executors_within_goal"]
    assert figures["total_utility_fraction"]["real"] == pytest.approx(
        figures["total_utility_fraction"]["simulated"]
    )
    assert figures["total_within_goal"]
    table = rows(figures)
    assert table[-1][0] == "total" and table[-1][-1] == "+0.000"
    assert {r[0] for r in table} == {"gold", "silver", "bronze", "total"}


def test_a_simulator_far_from_the_record_misses_the_goals(simulated: ContentionRun) -> None:
    # The "real" run held one executor more for bronze all along, at a hundred times the
    # latency objective (earning a hundredth of the priority).
    slowest = 100 * LONG.top.latency_slo_ms
    recorded = _with_warm_up(simulated, 10.0)
    real = dataclasses.replace(
        recorded,
        samples=tuple(
            dataclasses.replace(
                s,
                spark={**s.spark, "bronze": s.spark["bronze"] + 1.1},
                latency_ms=dict.fromkeys(s.latency_ms, slowest),
            )
            for s in recorded.samples
        ),
    )
    figures = compare(real, [simulated])
    assert figures["total_utility_fraction"]["real"] == pytest.approx(0.01)
    assert not figures["total_within_goal"]
    assert not figures["jobs"]["bronze"]["executors_within_goal"]
    assert figures["jobs"]["gold"]["executors_within_goal"]


def test_a_record_round_trips_and_the_command_compares_it(
    simulated: ContentionRun, tmp_path: Path
) -> None:
    path = save_record(_with_warm_up(simulated, 30.0), tmp_path / "spark-contention.json")
    loaded = load_record(path)
    assert job_figures(loaded) == job_figures(_with_warm_up(simulated, 30.0))
    assert calibrate(loaded, [1])["total_within_goal"]
    out = ok(henge("bench", "calibrate", "--record", str(path), "--seeds", "1",
                   "--json", str(tmp_path / "c.json")))  # fmt: skip
    assert "calibration" in out and "within 0.05: yes" in out
    assert json.loads((tmp_path / "c.json").read_text())["seeds"] == 1
