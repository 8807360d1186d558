"""The built-in scenarios beyond the paper's experiments: their design numbers hold in the
simulator's model (checked with the oracle, which knows the true curves), and each runs."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import pytest

from scheduler.core.slo import meets_slo
from scheduler.sim.oracle import solve
from scheduler.sim.run import run_scenario
from scheduler.sim.scenario import NodeLoss, Scenario, Spike, TraceSpec
from scheduler.sim.scenario_file import load_scenario
from scheduler.sim.summary import summarize
from scheduler.sim.world import SimWorld

NAMES = ("tiers-spike", "tiers-overload", "bursty", "tiers-diurnal", "flash-crowd")


def cores(scn: Scenario) -> float:
    return sum(n.cores for n in scn.cluster.nodes)


def oracle_at(scn: Scenario, t_s: float, seed: int = 1) -> tuple[float, dict[str, int]]:
    world = SimWorld(scn, seed)
    present = [s for s in scn.specs() if s.arrives_at_s <= t_s]
    solution = solve(world, present, world.start + timedelta(seconds=t_s))
    return solution.utility, solution.executors


def needed_cores(scn: Scenario, t_s: float, seed: int = 1) -> dict[str, int]:
    """Each job's cores at the fewest executors that meet its SLO at ``t_s``."""
    world = SimWorld(scn, seed)
    at = world.start + timedelta(seconds=t_s)
    return {
        job.name: job.executors.cores
        * next(
            e
            for e in range(job.executors.min, job.executors.max + 1)
            if meets_slo(world.true_utility(job.name, e, at), job.priority)
        )
        for job in scn.jobs
    }


@pytest.mark.parametrize("name", NAMES)
def test_each_loads_and_runs_a_short_horizon_under_static(name: str) -> None:
    scn = load_scenario(name)
    assert scn.name == name and scn.description and scn.scheduler_start_s == 900
    assert 2 * 3600 <= scn.duration_s <= 4.25 * 3600
    short = dataclasses.replace(scn, duration_s=scn.scheduler_start_s + 600)
    result = run_scenario(short, "static", seed=1)
    summary = summarize(result)
    assert summary["rounds"] == 61  # t = 0, 10, ..., 600
    assert 0 < summary["utility"]["fraction"] <= 1
    assert set(summary["tiers"]) == {f"{p:g}" for p in {j.priority for j in scn.jobs}}


def test_the_tier_scenarios_have_three_tiers_of_two_named_after_them() -> None:
    for name in ("tiers-spike", "tiers-overload"):
        scn = load_scenario(name)
        assert cores(scn) == 96 and scn.duration_s == 3 * 3600
        tiers = {(j.tenant, j.priority) for j in scn.jobs}
        assert tiers == {("gold", 90), ("silver", 50), ("bronze", 10)}
        assert all(j.shape == "pageload" for j in scn.jobs)
        (spike,) = scn.events
        assert isinstance(spike, Spike) and spike.jobs == ("gold-1", "gold-2")
        assert (spike.at_s, spike.duration_s) == (3600, 3600)


def test_tiers_spike_meets_every_slo_with_room_and_starts_sized_wrong() -> None:
    scn = load_scenario("tiers-spike")
    base, spike = needed_cores(scn, 1800), needed_cores(scn, 5400)
    assert sum(base.values()) == 58 < cores(scn)
    assert sum(spike.values()) == 86 <= cores(scn)  # every SLO stays reachable in the spike
    held = {j.name: j.executors.initial * j.executors.cores for j in scn.jobs}
    assert all(held[n] < base[n] for n in ("gold-1", "gold-2", "silver-1", "silver-2"))
    assert all(held[n] > base[n] for n in ("bronze-1", "bronze-2"))
    # with bronze keeping what it starts with, the spike does not fit: it must give way
    assert spike["gold-1"] * 2 + spike["silver-1"] * 2 + held["bronze-1"] * 2 > cores(scn)
    for t_s in (1800, 5400):
        utility, _ = oracle_at(scn, t_s)
        assert utility == pytest.approx(300)


def test_tiers_overload_keeps_the_top_tiers_whole_only_if_bronze_gives_way() -> None:
    scn = load_scenario("tiers-overload")
    spike = needed_cores(scn, 5400)
    assert sum(spike.values()) == 104 > cores(scn)
    top = spike["gold-1"] + spike["gold-2"] + spike["silver-1"] + spike["silver-2"]
    assert top <= cores(scn) < top + spike["bronze-1"] + spike["bronze-2"]
    utility, executors = oracle_at(scn, 5400)
    assert utility < 300
    assert all(executors[n] >= spike[n] for n in ("gold-1", "gold-2", "silver-1", "silver-2"))
    assert executors["bronze-1"] + executors["bronze-2"] == cores(scn) - top


def test_flash_crowd_starts_full_with_slack_and_has_room_for_the_newcomer() -> None:
    scn = load_scenario("flash-crowd")
    running = [j for j in scn.jobs if j.arrives_at_s == 0]
    (newcomer,) = [j for j in scn.jobs if j.arrives_at_s > 0]
    assert newcomer.priority > max(j.priority for j in running)
    assert sum(j.executors.initial * j.executors.cores for j in running) == cores(scn)
    world = SimWorld(scn, 1)
    for job in running:  # every running job meets its SLO at its initial size
        utility = world.true_utility(job.name, job.executors.initial, world.start)
        assert meets_slo(utility, job.priority), job.name
    need = needed_cores(scn, newcomer.arrives_at_s + 60)
    assert need[newcomer.name] >= 20
    assert sum(need.values()) <= cores(scn)
    utility, _ = oracle_at(scn, newcomer.arrives_at_s + 60)
    assert utility == pytest.approx(sum(j.priority for j in scn.jobs))


def test_bursty_has_room_even_without_the_lost_node() -> None:
    scn = load_scenario("bursty")
    (loss,) = scn.events
    assert isinstance(loss, NodeLoss) and loss.duration_s == 1800
    assert all(j.input.bursts is not None for j in scn.jobs)
    assert all(j.input.trace is not None and j.input.trace.jitter_minutes for j in scn.jobs)
    during = loss.at_s + 600
    utility, executors = oracle_at(scn, during)
    assert utility == pytest.approx(sum(j.priority for j in scn.jobs))
    by_name = {j.name: j for j in scn.jobs}
    used = sum(n * by_name[name].executors.cores for name, n in executors.items())
    assert used <= cores(scn) - 16


def test_tiers_diurnal_peaks_together_exceed_the_cluster() -> None:
    scn = load_scenario("tiers-diurnal")
    peaks: dict[str, int] = {}
    for t_s in range(int(scn.scheduler_start_s), int(scn.duration_s), 1200):
        for name, need in needed_cores(scn, t_s).items():
            peaks[name] = max(peaks.get(name, 0), need)
    assert sum(peaks.values()) > 1.5 * cores(scn)
    assert len({j.input.trace.start_minute for j in scn.jobs if j.input.trace}) == len(scn.jobs)


def test_two_of_them_mix_executor_sizes_and_shapes() -> None:
    mixed = [
        name
        for name in NAMES
        if {j.executors.cores for j in load_scenario(name).jobs} == {1, 2, 4}
        and len({j.shape for j in load_scenario(name).jobs}) >= 3
    ]
    assert len(mixed) >= 2


EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "scenarios"


def replace_speed(trace: TraceSpec, seconds_per_minute: float) -> TraceSpec:
    return dataclasses.replace(trace, compression=seconds_per_minute)


@pytest.mark.parametrize(
    ("name", "seconds_per_minute", "trace_hours"),
    [
        ("tiers-diurnal-real-time", 60, 25.5),
        ("tiers-diurnal-3x", 20, 25.5),
        ("tiers-diurnal-12x", 5, 102),
    ],
)
def test_the_tiers_diurnal_examples_differ_only_in_the_speed_of_the_trace(
    name: str, seconds_per_minute: float, trace_hours: float
) -> None:
    base = load_scenario("tiers-diurnal")
    variant = load_scenario(str(EXAMPLES / f"{name}.yaml"))
    assert variant.name == name and base.duration_s / 10 / 60 == 25.5
    # The same jobs, offsets and cluster; only the seconds per trace minute (and, for the
    # fastest, the trace hours played) differ.
    assert variant.duration_s / seconds_per_minute / 60 == trace_hours
    assert variant.cluster == base.cluster and variant.events == base.events
    for ours, theirs in zip(base.jobs, variant.jobs, strict=True):
        trace = theirs.input.trace
        assert trace is not None and trace.compression == seconds_per_minute
        at_base_speed = dataclasses.replace(theirs.input, trace=replace_speed(trace, 10.0))
        assert dataclasses.replace(theirs, input=at_base_speed) == ours


OTHER_EXAMPLES = (
    "crowd-and-spike",
    "node-loss-full",
    "four-tiers-bursty",
    "big-silver-spike",
    "diurnal-2core-slow",
    "many-jobs",
    "stateful-tiers",
    "mem-partitions",
    "same-priority-crowd",
    "tail-tiers-3x",
    "juice-spike",
    "small-realtime",
    "interference-tiers",
    "steps-drop",
    "big-executors",
    "capped-top",
    "custom-dag",
    "long-trigger",
    "equal-diurnal",
    "tight-trigger",
    "bursts-realtime",
    "coarse-4core",
    "high-min",
    "arrivals-wave",
    "one-node-bursts",
    "five-priorities",
    "eight-nodes-loss",
    "tight-4core",
)
"""Scenarios that are not built in, run to check the policies beyond the built-in ones."""

FEWER_TIERS = {
    "same-priority-crowd": 1,
    "custom-dag": 2,
    "equal-diurnal": 1,
    "tight-trigger": 2,
    "bursts-realtime": 2,
    "coarse-4core": 2,
    "tight-4core": 2,
}
"""The examples with fewer than three priority tiers, and how many they have."""


@pytest.mark.parametrize("name", OTHER_EXAMPLES)
def test_the_other_examples_load_and_run_a_short_horizon_under_static(name: str) -> None:
    scn = load_scenario(str(EXAMPLES / f"{name}.yaml"))
    assert scn.name == name and "Not built in" in scn.description
    short = dataclasses.replace(scn, duration_s=scn.scheduler_start_s + 300)
    summary = summarize(run_scenario(short, "static", seed=1))
    assert summary["rounds"] == 31  # t = 0, 10, ..., 300
    assert 0 < summary["utility"]["fraction"] <= 1
    assert len(summary["tiers"]) >= FEWER_TIERS.get(name, 3)


@pytest.mark.parametrize(
    "name", ["stateful-bursty", "tiers-diurnal-history", "tiers-diurnal-break", "nasa-week"]
)
def test_the_cost_and_forecast_scenarios_load_and_run_a_short_horizon(name: str) -> None:
    scn = load_scenario(name)
    assert scn.name == name and scn.description and scn.scheduler_start_s == 900
    short = dataclasses.replace(scn, duration_s=scn.scheduler_start_s + 300)
    summary = summarize(run_scenario(short, "henge", seed=1))
    assert 0 < summary["utility"]["fraction"] <= 1
    assert set(summary["tiers"]) == {"90", "50", "10"}


def test_stateful_bursty_reloads_every_job_for_10_to_60_s() -> None:
    scn = load_scenario("stateful-bursty")
    reloads = sorted(j.state.reload_s for j in scn.jobs if j.state is not None)
    assert len(reloads) == len(scn.jobs) == 6
    assert reloads[0] == pytest.approx(10.0) and reloads[-1] == pytest.approx(60.0)
    trace = scn.jobs[0].input.trace
    assert trace is not None and trace.compression == 60  # a trace minute per minute


def test_tiers_diurnal_history_records_a_week_before_it_starts() -> None:
    scn = load_scenario("tiers-diurnal-history")
    base = load_scenario("tiers-diurnal")
    assert scn.history_days == 7 and base.history_days == 0
    assert [j.name for j in scn.jobs] == [j.name for j in base.jobs]
    for job, same in zip(scn.jobs, base.jobs, strict=True):
        assert job.input.trace is not None and same.input.trace is not None
        assert job.input.trace.start_minute == same.input.trace.start_minute + 7 * 1440


def test_nasa_week_plays_a_whole_week_after_two_weeks_of_history() -> None:
    scn = load_scenario("nasa-week")
    trace = scn.jobs[0].input.trace
    assert trace is not None and trace.compression == 5 and scn.history_days == 14
    minutes = scn.duration_s / trace.compression
    assert minutes >= 7 * 1440  # weekdays and a weekend
    assert trace.start_minute == 16 * 1440  # Monday 17 July (the trace starts on a Saturday)


def test_tiers_diurnal_break_breaks_the_day_its_history_predicts() -> None:
    scn = load_scenario("tiers-diurnal-break")
    history = load_scenario("tiers-diurnal-history")
    assert scn.jobs == history.jobs and scn.history_days == history.history_days
    factors = sorted(e.factor for e in scn.events if isinstance(e, Spike))
    assert factors == [0.4, 1.8]
