"""``henge bench reference``: the reference allocations of :mod:`scheduler.sim.reference` on
scenarios × seeds, with their utility and oracle fractions (mean and worst over the seeds)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from scheduler.bench.table import changes_per_job_day, spread_of
from scheduler.sim.reference import REFERENCE_POLICY, REFERENCES, Reference
from scheduler.sim.run import load, run_scenario, run_settings
from scheduler.sim.summary import summarize


def measure_references(
    scenarios: Sequence[str],
    seeds: Sequence[int],
    references: Sequence[Reference] = REFERENCES,
) -> dict[str, Any]:
    """Per scenario and reference: the fractions' mean and worst over the seeds (a
    :class:`~scheduler.bench.table.Spread` as a mapping) and the mean of its changes per job
    and simulated day."""
    figures: dict[str, Any] = {}
    for name in scenarios:
        scenario = load(name)
        step_s = run_settings(scenario).round_interval_s
        rows: dict[str, Any] = {}
        for reference in references:
            runs = [
                summarize(
                    run_scenario(
                        scenario, REFERENCE_POLICY, seed, steering=reference.steering(step_s)
                    )
                )
                for seed in seeds
            ]
            rows[reference.name] = {
                "summary": reference.summary,
                "seeds": list(seeds),
                "utility_fraction": asdict(spread_of([r["utility"]["fraction"] for r in runs])),
                "oracle_fraction": asdict(
                    spread_of([r["utility"]["oracle_fraction"] for r in runs])
                ),
                "changes_per_job_day": spread_of([changes_per_job_day(r) for r in runs]).mean,
            }
        figures[name] = rows
    return figures
