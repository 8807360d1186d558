"""The ``henge sim --json`` document (scheduler.sim.summary, DESIGN §5.2), with every number
worked out by hand."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest

from scheduler.sim.summary import sig, summarize, weighted_quantile
from scheduler.sim.types import ActionEvent, RoundSample, SimJobSpec, SimResult


def job(name: str, priority: float) -> SimJobSpec:
    return SimJobSpec(
        name=name,
        tenant="t",
        priority=priority,
        slo={"juice": 1.0},
        initial_executors=1,
        min_executors=1,
        max_executors=8,
    )


def sample(
    t_s: float,
    utilities: Mapping[str, float],
    max_utility: float,
    oracle: float | None = None,
    executors: Mapping[str, int] | None = None,
) -> RoundSample:
    return RoundSample(
        t_s=t_s,
        state="not_converged",
        action="none",
        job=None,
        reason="",
        total_utility=sum(utilities.values()),
        max_utility=max_utility,
        oracle_utility=oracle,
        utilities=dict(utilities),
        executors=dict(executors or dict.fromkeys(utilities, 1)),
    )


def action(t_s: float, kind: str, name: str) -> ActionEvent:
    return ActionEvent(t_s=t_s, kind=kind, job=name, from_executors=1, to_executors=2, reason="")


def make_result(
    samples: Sequence[RoundSample],
    actions: Sequence[ActionEvent] = (),
    jobs: Sequence[SimJobSpec] = (),
    *,
    wall_seconds: float = 1.5,
    policy: str = "henge",
    scenario: str = "two-jobs",
) -> SimResult:
    return SimResult(
        scenario=scenario,
        policy=policy,
        seed=3,
        sim_seconds=40.0,
        round_interval_s=10.0,
        jobs=tuple(jobs),
        samples=tuple(samples),
        actions=tuple(actions),
        executor_core_seconds=7200.0,
        wall_seconds=wall_seconds,
    )


JOBS = (job("A", 10), job("B", 20), job("C", 5))
SAMPLES = (
    sample(-10, {"A": 0, "B": 0}, 30, oracle=None, executors={"A": 1, "B": 1}),  # warm-up
    sample(0, {"A": 10, "B": 0}, 30, oracle=25, executors={"A": 2, "B": 1}),
    sample(10, {"A": 10, "B": 10}, 30, oracle=25, executors={"A": 2, "B": 3}),
    # no round at 20: the sample at 10 holds for 20 s
    sample(30, {"A": 10, "B": 20}, 30, oracle=30, executors={"A": 2, "B": 4}),
)
ACTIONS = (
    action(-5, "reconfigure", "A"),  # warm-up: not counted
    action(0, "reconfigure", "B"),
    action(5, "admit", "B"),
    action(20, "reconfigure", "B"),
    action(25, "reduce", "A"),
    action(26, "revert", "B"),
    action(27, "mystery", "A"),
    action(28, "replace", "B"),
)


@pytest.fixture
def summary() -> dict:
    return summarize(make_result(SAMPLES, ACTIONS, JOBS))


def test_has_exactly_the_design_keys(summary: dict) -> None:
    assert list(summary) == [
        "scenario", "policy", "policy_params", "seed", "sim_seconds", "utility", "slo_satisfaction",
        "time_to_max_utility_s", "rounds", "actions", "executor_core_hours", "tiers", "events",
        "jobs", "wall",
    ]  # fmt: skip
    assert set(summary["utility"]) == {"integral", "max_integral", "fraction", "oracle_fraction"}
    assert set(summary["slo_satisfaction"]) == {"mean", "p15", "p50", "p90"}
    assert set(summary["jobs"][0]) == {
        "name", "priority", "mean_utility_fraction", "actions", "final_executors",
    }  # fmt: skip
    assert (summary["scenario"], summary["policy"], summary["seed"]) == ("two-jobs", "henge", 3)
    assert summary["sim_seconds"] == 40.0


def test_utility_integrals_hold_each_sample_until_the_next(summary: dict) -> None:
    # durations 10, 20, 10 (the last holds one round interval); the warm-up sample is ignored.
    # integral = 10*10 + 20*20 + 30*10 = 800; max = 30*40 = 1200;
    # oracle = 25*10 + 25*20 + 30*10 = 1050.
    assert summary["utility"] == {
        "integral": 800.0,
        "max_integral": 1200.0,
        "fraction": 0.666667,
        "oracle_fraction": 0.761905,
    }
    assert summary["rounds"] == 3


def test_slo_satisfaction_is_time_weighted(summary: dict) -> None:
    # satisfaction 1/3 for 10 s, 2/3 for 20 s, 1 for 10 s: mean (10/3 + 40/3 + 10) / 40 = 2/3;
    # cumulative weights 10, 30, 40 → p15 (6 s) = 1/3, p50 (20 s) = 2/3, p90 (36 s) = 1.
    assert summary["slo_satisfaction"] == {
        "mean": 0.666667,
        "p15": 0.333333,
        "p50": 0.666667,
        "p90": 1.0,
    }


def test_time_to_max_and_core_hours(summary: dict) -> None:
    assert summary["time_to_max_utility_s"] == 30.0
    assert summary["executor_core_hours"] == 2.0


def test_actions_count_the_scheduler_part_only(summary: dict) -> None:
    assert summary["actions"] == {
        "reconfigure": 2,
        "reduce": 1,
        "revert": 1,
        "replace": 1,
        "total": 5,
        "admit": 1,
        "other": 1,
    }


def test_per_job_numbers(summary: dict) -> None:
    # B: utility/priority 0, 0.5, 1 for 10, 20, 10 s → (0 + 10 + 10) / 40 = 0.5;
    # its actions: reconfigure twice, a revert and a replacement (the admission is not counted).
    # C never appeared: nothing to average, no executors.
    assert summary["jobs"] == [
        {"name": "A", "priority": 10.0, "mean_utility_fraction": 1.0, "actions": 1,
         "final_executors": 2},
        {"name": "B", "priority": 20.0, "mean_utility_fraction": 0.5, "actions": 4,
         "final_executors": 4},
        {"name": "C", "priority": 5.0, "mean_utility_fraction": None, "actions": 0,
         "final_executors": None},
    ]  # fmt: skip


def test_oracle_fraction_is_null_when_a_sample_lacks_the_oracle() -> None:
    samples = [sample(0, {"A": 5}, 10, oracle=8), sample(10, {"A": 5}, 10, oracle=None)]
    assert (
        summarize(make_result(samples, jobs=[job("A", 10)]))["utility"]["oracle_fraction"] is None
    )


def test_samples_without_jobs_are_left_out_of_satisfaction_and_time_to_max() -> None:
    samples = [sample(0, {}, 0), sample(10, {"A": 5}, 10)]
    summary = summarize(make_result(samples, jobs=[job("A", 10)]))
    assert summary["slo_satisfaction"] == {"mean": 0.5, "p15": 0.5, "p50": 0.5, "p90": 0.5}
    assert summary["time_to_max_utility_s"] is None
    assert summary["utility"]["integral"] == 50.0
    assert summary["rounds"] == 2


def test_reaching_max_allows_a_tiny_relative_shortfall() -> None:
    samples = [sample(0, {"A": 9.0}, 10), sample(10, {"A": 10 * (1 - 1e-7)}, 10)]
    assert summarize(make_result(samples, jobs=[job("A", 10)]))["time_to_max_utility_s"] == 10.0


def test_empty_run() -> None:
    summary = summarize(make_result([], jobs=[job("A", 10)]))
    assert summary["utility"] == {
        "integral": 0.0, "max_integral": 0.0, "fraction": None, "oracle_fraction": None,
    }  # fmt: skip
    assert summary["slo_satisfaction"] == dict.fromkeys(("mean", "p15", "p50", "p90"))
    assert summary["rounds"] == 0
    assert summary["actions"]["total"] == 0


def test_floats_are_rounded_to_six_significant_digits() -> None:
    assert sig(123456789.0) == 123457000.0
    assert sig(0.000123456789) == 0.000123457
    assert sig(None) is None
    samples = [sample(0, {"A": 1}, 3)]
    assert summarize(make_result(samples, jobs=[job("A", 3)]))["utility"]["fraction"] == 0.333333


def test_only_wall_fields_differ_between_identical_runs() -> None:
    first = summarize(make_result(SAMPLES, ACTIONS, JOBS, wall_seconds=1.0))
    second = summarize(make_result(SAMPLES, ACTIONS, JOBS, wall_seconds=2.0))
    assert first != second
    assert first.pop("wall") == {"seconds": 1.0}
    second.pop("wall")
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_weighted_quantile_ignores_zero_weights() -> None:
    points = [(0.1, 0.0), (0.4, 1.0), (0.9, 3.0)]
    assert weighted_quantile(points, 0.0) == 0.4
    assert weighted_quantile(points, 0.25) == 0.4
    assert weighted_quantile(points, 0.26) == 0.9
    assert weighted_quantile([], 0.5) is None
