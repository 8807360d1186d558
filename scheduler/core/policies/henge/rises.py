"""How often a job's input rises faster than executors can follow it (``henge`` only).

A job meeting its SLO keeps the executors its recent peak input needs: scaling down is lazy.
What it keeps above the need of its input of the moment with ``headroom`` pays off only if the
input rises by more than ``headroom`` before executors could be moved back to it: after the
move that lent them is judged (up to a quiesce, ``quiesce_s``) and the move returning them has
run. Meanwhile a job missing its SLO could earn with them. So each job's rises are counted from
its reports: a rise begins in a round whose input exceeds ``1 + headroom`` times the lowest
input of the last ``quiesce_s`` (faster than executors follow) after a round that did not. The
time between the beginnings of rises is a moving average; the chance that the next rise comes
within a span (the policy uses ``2 × quiesce_s``) is the span over that time, or over the time
since the last rise when that is longer, and at most 1. After one rise only, the time since it
stands for the time between rises (the next is at least that far off): a job that has never
risen keeps what its peak needs, and one whose only rise was a spike that has passed may lend
the executors it kept for it, more readily the longer ago it was. How long a change should
hold (:func:`time_between`, for pricing it) also counts, after a first rise, the time the input
went without one before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


class Rises(NamedTuple):
    recent: tuple[tuple[float, float], ...]
    """(epoch seconds, input rate) of the rounds within the last ``span_s``, oldest first."""
    rising: bool
    """The newest input exceeds ``1 + headroom`` times the lowest of ``recent``."""
    last_start_s: float | None
    """When the latest rise began (epoch seconds)."""
    interval_s: float | None
    """Moving average of the time between the beginnings of rises."""
    first_s: float | None = None
    """When the job's input was first seen (epoch seconds; ``None`` in a record stored before
    it was kept)."""


def observe_rise(
    old: Rises | None, now_s: float, rate: float, span_s: float, headroom: float, alpha: float
) -> Rises:
    """``old`` with the input ``rate`` seen at ``now_s`` (a rise judged over ``span_s``)."""
    if old is None:
        return Rises(((now_s, rate),), False, None, None, now_s)
    # (plain loops over the time-ordered pairs: this runs for every job every round)
    earlier = old.recent
    first, end = 0, len(earlier)
    while first < end and now_s - earlier[first][0] > span_s:
        first += 1
    while end > first and earlier[end - 1][0] >= now_s:
        end -= 1  # (the same moment seen again)
    lowest = rate
    for k in range(first, end):
        lowest = min(lowest, earlier[k][1])
    recent = (*earlier[first:end], (now_s, rate))
    rising = rate > (1 + headroom) * lowest
    last, interval = old.last_start_s, old.interval_s
    if rising and not old.rising:
        if last is not None:
            gap = now_s - last
            interval = gap if interval is None else interval + alpha * (gap - interval)
        last = now_s
    return Rises(recent, rising, last, interval, old.first_s)


def chance_within(rises: Rises | None, now_s: float, span_s: float) -> float:
    """The chance that a rise begins within the next ``span_s`` (1 for a job never seen rising)."""
    if rises is None or rises.last_start_s is None:
        return 1.0
    since = now_s - rises.last_start_s
    between = since if rises.interval_s is None else max(rises.interval_s, since)
    return 1.0 if between <= span_s else span_s / between


def time_between(rises: Rises, now_s: float) -> float | None:
    """How long the input of a job goes between rises, for how long a change should hold
    (``None`` before its first rise): the moving average of the times between them, or the
    time since the last when longer. After one rise only, the longer of the time since it and
    the time from the input's first sight to it: a job steady for hours before a spike has gone
    that long without a rise, and a change made for the spike should not be priced as if the
    next one were minutes away."""
    last = rises.last_start_s
    if last is None:
        return None
    between = now_s - last
    if rises.interval_s is not None:
        return max(rises.interval_s, between)
    if rises.first_s is not None:
        return max(between, last - rises.first_s)
    return between


def highest(rises: Rises) -> float:
    """The highest input of the rounds within the span."""
    top = 0.0
    for _, rate in rises.recent:
        top = max(top, rate)
    return top


def dump_rises(rises: Rises) -> list[Any]:
    return [
        [list(p) for p in rises.recent],
        rises.rising,
        rises.last_start_s,
        rises.interval_s,
        rises.first_s,
    ]


def rises_from_json(data: Mapping[str, Any] | None) -> dict[str, Rises]:
    """Per-job records from their stored form (each as :func:`dump_rises` gives it)."""
    return {
        str(k): Rises(
            tuple((float(t), float(r)) for t, r in v[0]),
            bool(v[1]),
            None if v[2] is None else float(v[2]),
            None if v[3] is None else float(v[3]),
            None if len(v) < 5 or v[4] is None else float(v[4]),
        )
        for k, v in (data or {}).items()
    }
