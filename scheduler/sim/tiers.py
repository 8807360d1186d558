"""Priority tiers of a run: the jobs that share a priority, and how well each tier was served.

A tier's SLO satisfaction is the time-weighted mean, over the samples where any of its jobs is
present, of the tier's utility over its maximum (the sum of its present jobs' utilities over the
sum of their priorities: with one priority, the mean of utility / priority).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from scheduler.sim.held_samples import weighted_mean
from scheduler.sim.types import RoundSample, SimJobSpec


def tier_key(priority: float) -> str:
    """A tier's name in reports: its priority, without a trailing ``.0``."""
    return f"{priority:g}"


def tiers_of(jobs: Iterable[SimJobSpec]) -> dict[str, tuple[str, ...]]:
    """Tier name → its jobs' names, highest priority first."""
    by_priority: dict[float, list[str]] = {}
    for job in jobs:
        by_priority.setdefault(job.priority, []).append(job.name)
    return {tier_key(p): tuple(by_priority[p]) for p in sorted(by_priority, reverse=True)}


def tier_fraction(
    sample: RoundSample, names: Sequence[str], priorities: Mapping[str, float]
) -> float | None:
    """The tier's utility over its maximum in ``sample``; ``None`` when none of it is present."""
    present = [n for n in names if n in sample.utilities]
    if not present:
        return None
    return sum(sample.utilities[n] for n in present) / sum(priorities[n] for n in present)


def tier_satisfaction(
    jobs: Sequence[SimJobSpec], held: Sequence[tuple[RoundSample, float]]
) -> dict[str, tuple[float | None, tuple[str, ...]]]:
    """Tier name → (time-weighted SLO satisfaction, its jobs), highest priority first."""
    priorities = {j.name: j.priority for j in jobs}
    out: dict[str, tuple[float | None, tuple[str, ...]]] = {}
    for key, names in tiers_of(jobs).items():
        points = [
            (fraction, weight)
            for sample, weight in held
            if (fraction := tier_fraction(sample, names, priorities)) is not None
        ]
        out[key] = (weighted_mean(points), names)
    return out
