"""Scenario by name or path → world → run under a policy → result, summary and plots."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler.round.forecasts import ForecastSource
from scheduler.sim.events import event_marks
from scheduler.sim.forecasts import SimForecasts
from scheduler.sim.runner import Progress, RoundHook, RunSettings, Steering, simulate
from scheduler.sim.scenario import Scenario
from scheduler.sim.scenario_file import load_scenario
from scheduler.sim.summary import summarize
from scheduler.sim.types import SimResult
from scheduler.sim.world import build_world


def run_settings(scenario: Scenario, round_interval_s: float | None = None) -> RunSettings:
    return RunSettings(
        duration_s=scenario.duration_s,
        scheduler_start_s=scenario.scheduler_start_s,
        sub_window_s=scenario.sub_window_s,
        round_interval_s=round_interval_s or scenario.sub_window_s,
    )


def run_scenario(
    scenario: Scenario,
    policy: str,
    seed: int,
    *,
    policy_params: Mapping[str, Any] | None = None,
    oracle: bool = True,
    progress: Progress | None = None,
    steering: Steering | None = None,
    on_round: RoundHook | None = None,
) -> SimResult:
    world = build_world(scenario, seed)
    forecasts = None
    if scenario.history_days > 0:
        days = scenario.history_days

        def forecasts(names: Mapping[str, str]) -> ForecastSource:
            return SimForecasts(world, names, days)

    return simulate(
        world,
        scenario=scenario.name,
        policy=policy,
        seed=seed,
        settings=run_settings(scenario),
        policy_params=policy_params,
        oracle=oracle,
        progress=progress,
        events=event_marks(scenario),
        steering=steering,
        forecasts=forecasts,
        on_round=on_round,
    )


@dataclass(frozen=True)
class Outputs:
    summary: dict[str, Any]
    json_path: Path | None
    plot_path: Path | None


def write_outputs(
    result: SimResult, json_path: Path | None, plot_path: Path | None, variant: str | None = None
) -> Outputs:
    """The summary of ``result``, written as JSON and drawn where paths are given; a bench
    variant of the policy (``henge@wide``) is recorded as ``variant``, after its settings."""
    summary = summarize(result)
    if variant is not None:
        summary = _with_variant(summary, variant)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")
    if plot_path is not None:
        from scheduler.sim.plots import plot_run

        plot_path.parent.mkdir(parents=True, exist_ok=True)
        plot_run(result, plot_path)
    return Outputs(summary, json_path, plot_path)


def _with_variant(summary: dict[str, Any], variant: str) -> dict[str, Any]:
    items = list(summary.items())
    at = list(summary).index("policy_params") + 1
    return dict([*items[:at], ("variant", variant), *items[at:]])


def write_rounds(result: SimResult, path: Path) -> None:
    """Every round of ``result`` as a line of JSON (the fields of
    :class:`~scheduler.sim.types.RoundSample`), to read a run round by round."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        for sample in result.samples:
            row = {
                f.name: dict(v) if isinstance(v := getattr(sample, f.name), Mapping) else v
                for f in dataclasses.fields(sample)
            }
            out.write(json.dumps(row) + "\n")


def load(name_or_path: str) -> Scenario:
    return load_scenario(name_or_path)


def scenario_names(requested: Sequence[str] | None) -> list[str]:
    from scheduler.sim.scenario_file import builtin_scenarios

    return list(requested) if requested else builtin_scenarios()
