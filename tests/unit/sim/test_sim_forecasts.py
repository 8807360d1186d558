"""The simulator's input history and forecasts (``history_days``): what a job that has run for
days would have recorded, fitted as the service's forecaster fits it."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from scheduler.core.decide import CoreSettings
from scheduler.forecast.ahead import forecast_ahead, seasonal_naive
from scheduler.sim.forecasts import REFIT_STEPS, SimForecasts
from scheduler.sim.inputs import load_trace
from scheduler.sim.run import run_scenario, run_settings
from scheduler.sim.runner import Simulation
from scheduler.sim.scenario_file import ScenarioError, parse_scenario
from scheduler.sim.summary import summarize
from scheduler.sim.world import SimWorld

from .world_kit import document

TRACE = {"trace": {"file": "nasa-http-1995-5d.csv", "scale": 3000, "compression": 10,
                   "start_minute": 2880}}  # fmt: skip


def traced(**extra: object) -> dict[str, object]:
    return document(job={"input": TRACE}, **extra)


def test_history_days_is_read_and_checked() -> None:
    assert parse_scenario(traced(history_days=2)).history_days == 2.0
    assert parse_scenario(traced()).history_days == 0.0
    for wrong in (-1, 36):
        with pytest.raises(ScenarioError, match="history_days"):
            parse_scenario(traced(history_days=wrong))


def test_the_history_is_the_traces_earlier_minutes_then_what_arrived() -> None:
    scenario = parse_scenario(traced(history_days=1))
    world = SimWorld(scenario, 1)
    step, rates = world.input_history("a", 1, world.start + timedelta(seconds=95))
    events = load_trace(scenario.jobs[0].input.trace.file)  # type: ignore[union-attr]
    assert step == 10.0 and len(rates) == 1440 + 9  # a day of trace minutes, then 9 whole steps
    assert rates[0] == pytest.approx(events[2880 - 1440] * 50.0)
    assert rates[1439] == pytest.approx(events[2879] * 50.0)
    assert rates[1440:] == pytest.approx([events[2880 + i] * 50.0 for i in range(9)])


def test_a_constant_input_has_a_flat_history_in_minutes() -> None:
    world = SimWorld(parse_scenario(document()), 1)
    step, rates = world.input_history("a", 0.5, world.start + timedelta(seconds=130))
    assert step == 60.0 and rates == [2000.0] * (720 + 2)


def test_forecasts_are_fitted_once_an_hour_of_steps_and_start_at_the_next_step() -> None:
    world = SimWorld(parse_scenario(traced(history_days=2)), 1)
    source = SimForecasts(world, {"job-a": "a"}, 2)
    first = source.latest(["job-a", "unknown"], world.start + timedelta(seconds=95))["job-a"]
    assert set(source.fitted) == {"job-a"}
    assert first.start == world.start + timedelta(seconds=90) and first.step_s == 10.0
    assert len(first.mean) == len(first.upper) == len(first.naive) == 60
    assert all(u >= m >= 0 for m, u in zip(first.mean, first.upper, strict=True))
    soon = world.start + timedelta(seconds=95 + 10 * (REFIT_STEPS - 2))
    assert source.latest(["job-a"], soon)["job-a"] is first
    later = source.latest(["job-a"], soon + timedelta(seconds=20))["job-a"]
    assert later is not first and later.start > first.start


def test_seasonal_naive_takes_a_week_a_day_or_the_last_known_step() -> None:
    week = [float(i) for i in range(10080)]
    assert seasonal_naive(week, 3) == (0.0, 1.0, 2.0)
    day = [float(i % 1440) for i in range(2000)]
    assert seasonal_naive(day, 2) == (day[2000 - 1440], day[2001 - 1440])
    assert seasonal_naive([5.0, 7.0, math.nan], 2) == (7.0, 7.0)


def test_forecast_ahead_keeps_the_callers_step() -> None:
    rates = [100.0 + 50.0 * math.sin(2 * math.pi * i / 1440) for i in range(3 * 1440)]
    forecast = forecast_ahead(rates, SimWorld(parse_scenario(document()), 1).start, step_s=10.0)
    assert forecast.step_s == 10.0 and len(forecast.mean) == 60
    assert forecast.mean[0] == pytest.approx(rates[0], rel=0.1)  # (the next day's same minute)


def test_a_scenario_with_history_reaches_the_policy_with_its_forecasts() -> None:
    scenario = parse_scenario(traced(history_days=1, duration_s=1200))
    world = SimWorld(scenario, 1)
    core = CoreSettings(policy="henge", policy_params={"proactive": True})
    run = Simulation(world, core, run_settings(scenario), oracle=False,
                     forecasts=lambda names: SimForecasts(world, names, 1))  # fmt: skip
    run.run()
    assert run.memory is not None and run.memory.state is not None
    # (the policy scores each forecast against the input it measures, round by round)
    errors = run.memory.state["policy_state"]["forecast_errors"]
    assert list(errors) == list(run.ids.values()) and all(e[1] > 0 for e in errors.values())
    # and run_scenario wires the forecasts in for a scenario with history
    assert 0 < summarize(run_scenario(scenario, "henge", 1))["utility"]["fraction"] <= 1
