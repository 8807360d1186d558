"""How long the scheduler takes to recover after each event of a run.

An event (:class:`scheduler.sim.types.EventMark`) opens a window that lasts until the next event
at a later time, or the end of the run. A sample is *recovered* when every job present meets
its SLO (utility equal to its priority within :data:`TOLERANCE`, relative), or, when the oracle
says the SLOs cannot all be met then (its utility below the maximum), when the total utility is
within :data:`ORACLE_SHARE` of the oracle's. The recovery time runs from the event to the first
sample from which every sample is recovered for :data:`HOLD_S` seconds, or up to the end of
the window; ``None`` when there is none (not recovered before the next event or the end).

Per tier (the jobs of one priority, :mod:`scheduler.sim.tiers`) the same, with the tier's jobs,
its utility and its share of the oracle's allocation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from scheduler.sim.held_samples import scheduler_samples
from scheduler.sim.tiers import tiers_of
from scheduler.sim.types import EventMark, RoundSample, SimResult

TOLERANCE = 1e-6
"""A job meets its SLO when its utility is at least its priority × (1 − this)."""
ORACLE_SHARE = 0.99
"""When the SLOs cannot all be met, recovered means at least this share of the oracle."""
HOLD_S = 300.0
"""Recovered means recovered for this long (or until the next event): a passing burst of
noise after the recovery does not undo it, and the state just before an event, still seen in
the first sample after it, does not count as a recovery."""


@dataclass(frozen=True)
class Recovery:
    """One event and the seconds from it until the run recovered (``None``: never)."""

    mark: EventMark
    after_s: float | None
    tiers: Mapping[str, float | None]
    """Tier name → its own recovery time, for the tiers present after the event."""


def recovered(
    sample: RoundSample,
    names: Sequence[str],
    priorities: Mapping[str, float],
    oracle: float | None,
) -> bool:
    """Whether the jobs ``names`` (those present in ``sample``) have recovered; ``oracle`` is
    their utility in the oracle's allocation, if known."""
    present = [n for n in names if n in sample.utilities]
    utility = sum(sample.utilities[n] for n in present)
    best = sum(priorities[n] for n in present)
    if all(sample.utilities[n] >= priorities[n] * (1 - TOLERANCE) for n in present):
        return True
    if oracle is None or oracle >= best * (1 - TOLERANCE):
        return False  # every SLO could be met, and one is not
    return utility >= ORACLE_SHARE * oracle


def settling_time(
    window: Sequence[RoundSample],
    since: float,
    ok: Callable[[RoundSample], bool],
    hold_s: float = HOLD_S,
) -> float | None:
    """Seconds from ``since`` to the first sample of ``window`` from which every sample is
    ``ok`` for at least ``hold_s`` seconds, or up to the end of the window; ``None`` if none."""
    start: float | None = None
    for sample in window:
        if not ok(sample):
            start = None
            continue
        if start is None:
            start = sample.t_s
        if sample.t_s - start >= hold_s:
            break
    return None if start is None else start - since


def recoveries(result: SimResult) -> list[Recovery]:
    """The recovery after each of the run's events that falls in the scheduler's part."""
    samples = [s for s, _ in scheduler_samples(result)]
    priorities = {j.name: j.priority for j in result.jobs}
    tiers = tiers_of(result.jobs)
    times = sorted({m.t_s for m in result.events})
    everyone = _check(None, priorities)
    out: list[Recovery] = []
    for mark in (m for m in result.events if m.t_s >= 0):
        until = next((t for t in times if t > mark.t_s), float("inf"))
        window = [s for s in samples if mark.t_s <= s.t_s < until]
        per_tier = {
            key: settling_time(window, mark.t_s, _check(names, priorities))
            for key, names in tiers.items()
            if any(n in s.utilities for s in window for n in names)
        }
        out.append(Recovery(mark, settling_time(window, mark.t_s, everyone), per_tier))
    return out


def _check(
    names: Sequence[str] | None, priorities: Mapping[str, float]
) -> Callable[[RoundSample], bool]:
    """The recovery test of one sample for the jobs ``names`` (``None``: every job present,
    against the oracle's total)."""

    def check(sample: RoundSample) -> bool:
        if names is None:
            return recovered(sample, list(sample.utilities), priorities, sample.oracle_utility)
        shares = sample.oracle_utilities
        oracle = None if shares is None else sum(shares.get(n, 0.0) for n in names)
        return recovered(sample, names, priorities, oracle)

    return check
