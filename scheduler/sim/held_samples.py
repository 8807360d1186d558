"""The samples of the scheduler's part of a run, each with the seconds it holds for, and the
time-weighted mean over them: what the summary, the tiers and the recovery times build on.

Only samples with ``t_s >= 0`` count. Each holds from its ``t_s`` until the next one's; the last
holds for one round interval.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from scheduler.sim.types import RoundSample, SimResult


def scheduler_samples(result: SimResult) -> list[tuple[RoundSample, float]]:
    """The samples with ``t_s >= 0`` in time order, each with the seconds it holds for."""
    samples = sorted((s for s in result.samples if s.t_s >= 0), key=lambda s: s.t_s)
    durations = [b.t_s - a.t_s for a, b in itertools.pairwise(samples)]
    if samples:
        durations.append(result.round_interval_s)
    return list(zip(samples, durations, strict=True))


def weighted_mean(points: Iterable[tuple[float, float]]) -> float | None:
    """The mean of ``(value, weight)`` pairs by weight; ``None`` when the weights sum to 0."""
    pairs = list(points)
    total_weight = sum(w for _, w in pairs)
    if total_weight <= 0:
        return None
    return sum(v * w for v, w in pairs) / total_weight
