"""The numbers of one simulated run: the ``henge sim --json`` document (DESIGN §5.2).

Definitions (only the scheduler's part of the run counts: samples and actions with ``t_s >= 0``):

- Each sample holds from its ``t_s`` until the next sample's; the last holds for one round
  interval. That duration is the sample's weight everywhere below.
- ``utility.integral`` / ``max_integral``: step integrals (utility × seconds) of the total and
  of the maximum utility; ``fraction`` = integral / max_integral; ``oracle_fraction`` = integral
  / the oracle's utility integrated the same way, ``null`` unless every sample has an oracle value.
- ``slo_satisfaction``: total / max utility at each sample (DESIGN §2), time-weighted mean and
  15th/50th/90th time-weighted percentiles (the smallest value whose cumulative weight reaches
  the quantile). Samples with no job present (max utility 0) are left out.
- ``time_to_max_utility_s``: the first ``t_s`` at which total utility reaches the maximum
  (within 1e-6 relative, with at least one job present); ``null`` if never.
- ``actions``: counts by kind; ``total`` = reconfigure + reduce + revert + replace (a job's slow
  executors replaced, its count unchanged). Admissions are counted under ``admit`` and any other
  kind under ``other``, neither in ``total``.
- ``executor_core_hours``: the result's executor core-seconds / 3600.
- ``tiers``: per priority (``"90"``), highest first, ``jobs`` (its jobs) and ``mean``, the
  time-weighted mean of the tier's utility / maximum over the samples where its jobs are present
  (:mod:`scheduler.sim.tiers`).
- ``events``: per scenario event while the scheduler acts (input spike start and end, node loss
  and interference start and end, collector outage start and end, arrivals): ``kind``, ``at_s``
  (from the scheduler's start), ``subject`` (jobs or nodes; empty: all), ``recovered_after_s``
  (until every job meets its SLO again, or the total is within 1 % of the oracle's when they
  cannot all be met, and stays so for 300 s or up to the next event; ``null`` if not by then)
  and ``tiers``, the same per tier (:mod:`scheduler.sim.recovery`).
- per job: ``mean_utility_fraction`` is the time-weighted mean of utility / priority over the
  samples where the job is present (``null`` if none); ``actions`` counts its reconfigure,
  reduce, revert and replace actions; ``final_executors`` is its executor count in the last
  sample that has it (``null`` if none); ``model_error``, only when the result carries one for
  the job (the policy's model against the truth), is passed through.

Floats are rounded to 6 significant digits so that the JSON is stable. Wall-clock values live
under the top-level ``"wall"`` key, which a determinism check drops.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from scheduler.sim.held_samples import scheduler_samples, weighted_mean
from scheduler.sim.recovery import recoveries
from scheduler.sim.tiers import tier_satisfaction
from scheduler.sim.types import RoundSample, SimResult

COUNTED_KINDS = ("reconfigure", "reduce", "revert", "replace")
QUANTILES = {"p15": 0.15, "p50": 0.50, "p90": 0.90}
REACHED_TOLERANCE = 1e-6
SIGNIFICANT_DIGITS = 6


def sig(value: float | None, digits: int = SIGNIFICANT_DIGITS) -> float | None:
    """``value`` rounded to ``digits`` significant digits (None and non-finite pass through)."""
    if value is None or not math.isfinite(value):
        return value
    return float(f"{value:.{digits}g}")


def satisfaction_points(result: SimResult) -> list[tuple[float, float]]:
    """(SLO satisfaction, weight in seconds) for each counted sample with a job present."""
    return [
        (s.total_utility / s.max_utility, weight)
        for s, weight in scheduler_samples(result)
        if s.max_utility > 0
    ]


def weighted_quantile(points: Sequence[tuple[float, float]], q: float) -> float | None:
    """The smallest value whose cumulative weight is at least ``q`` of the total (the inverse
    of the weighted step CDF)."""
    pairs = sorted(p for p in points if p[1] > 0)
    total_weight = sum(w for _, w in pairs)
    if total_weight <= 0:
        return None
    threshold = q * total_weight * (1 - 1e-12)
    cumulative = 0.0
    for value, weight in pairs:
        cumulative += weight
        if cumulative >= threshold:
            return value
    return pairs[-1][0]


def summarize(result: SimResult) -> dict[str, Any]:
    """The DESIGN §5.2 document for ``result`` (see the module docstring for definitions)."""
    held = scheduler_samples(result)
    actions = [a for a in result.actions if a.t_s >= 0]
    return {
        "scenario": result.scenario,
        "policy": result.policy,
        "policy_params": dict(result.policy_params),
        "seed": result.seed,
        "sim_seconds": sig(result.sim_seconds),
        "utility": _utility(held),
        "slo_satisfaction": _satisfaction(result),
        "time_to_max_utility_s": sig(_time_to_max(held)),
        "rounds": len(held),
        "actions": _action_counts(a.kind for a in actions),
        "executor_core_hours": sig(result.executor_core_seconds / 3600.0),
        "tiers": _tiers(result, held),
        "events": _events(result),
        "jobs": _jobs(result, held),
        "wall": {"seconds": sig(result.wall_seconds)},
    }


def _tiers(
    result: SimResult, held: Sequence[tuple[RoundSample, float]]
) -> dict[str, dict[str, Any]]:
    return {
        key: {"mean": sig(mean), "jobs": list(names)}
        for key, (mean, names) in tier_satisfaction(result.jobs, held).items()
    }


def _events(result: SimResult) -> list[dict[str, Any]]:
    return [
        {
            "kind": r.mark.kind,
            "at_s": sig(r.mark.t_s),
            "subject": list(r.mark.subject),
            "recovered_after_s": sig(r.after_s),
            "tiers": {key: sig(after) for key, after in r.tiers.items()},
        }
        for r in recoveries(result)
    ]


def _utility(held: Sequence[tuple[RoundSample, float]]) -> dict[str, float | None]:
    integral = sum(s.total_utility * w for s, w in held)
    max_integral = sum(s.max_utility * w for s, w in held)
    oracle_fraction: float | None = None
    if held and all(s.oracle_utility is not None for s, _ in held):
        oracle_integral = sum((s.oracle_utility or 0.0) * w for s, w in held)
        oracle_fraction = integral / oracle_integral if oracle_integral > 0 else None
    return {
        "integral": sig(integral),
        "max_integral": sig(max_integral),
        "fraction": sig(integral / max_integral) if max_integral > 0 else None,
        "oracle_fraction": sig(oracle_fraction),
    }


def _satisfaction(result: SimResult) -> dict[str, float | None]:
    points = satisfaction_points(result)
    out = {"mean": sig(weighted_mean(points))}
    for key, q in QUANTILES.items():
        out[key] = sig(weighted_quantile(points, q))
    return out


def reaches_max(sample: RoundSample) -> bool:
    return sample.max_utility > 0 and sample.total_utility >= sample.max_utility * (
        1 - REACHED_TOLERANCE
    )


def _time_to_max(held: Sequence[tuple[RoundSample, float]]) -> float | None:
    return next((s.t_s for s, _ in held if reaches_max(s)), None)


def _action_counts(kinds: Iterable[str]) -> dict[str, int]:
    counts = Counter(kinds)
    out = {kind: counts[kind] for kind in COUNTED_KINDS}
    out["total"] = sum(out.values())
    out["admit"] = counts["admit"]
    out["other"] = sum(n for kind, n in counts.items() if kind not in (*COUNTED_KINDS, "admit"))
    return out


def _jobs(result: SimResult, held: Sequence[tuple[RoundSample, float]]) -> list[dict[str, Any]]:
    counted = Counter(a.job for a in result.actions if a.t_s >= 0 and a.kind in COUNTED_KINDS)
    every = sorted(result.samples, key=lambda s: s.t_s)
    jobs = []
    for spec in result.jobs:
        fractions = [
            (s.utilities[spec.name] / spec.priority, w) for s, w in held if spec.name in s.utilities
        ]
        final = next(
            (s.executors[spec.name] for s in reversed(every) if spec.name in s.executors), None
        )
        entry: dict[str, Any] = {
            "name": spec.name,
            "priority": sig(spec.priority),
            "mean_utility_fraction": sig(weighted_mean(fractions)),
            "actions": counted[spec.name],
            "final_executors": final,
        }
        if spec.name in result.model_errors:
            entry["model_error"] = {k: sig(v) for k, v in result.model_errors[spec.name].items()}
        jobs.append(entry)
    return jobs
