"""The micro-batch latency estimator (DESIGN §2 "Latency"), standard library only.

The rows of batch ``k`` (start ``s_k``, previous start ``s_{k-1}``, end ``e_k``) arrived
between ``s_{k-1}`` and ``s_k``; with uniform arrival their latencies are uniform on
``[e_k - s_k, e_k - s_{k-1}]``, shifted up by ``backlog_at_start / arrival_rate`` when rows were
left waiting at the source. A window's statistic is over the row-weighted mixture of its
batches. This is the same estimate as ``scheduler.core.latency`` (a test holds them equal); the
agent carries its own copy because it may import nothing but PySpark and the standard library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

_BISECT_STEPS = 200


@dataclass(frozen=True)
class Batch:
    """One finished micro-batch, times in epoch seconds."""

    start: float
    end: float
    rows: float
    previous_start: float | None = None
    backlog_at_start: float | None = None


@dataclass(frozen=True)
class Uniform:
    rows: float
    low_ms: float
    high_ms: float

    def cdf(self, x_ms: float) -> float:
        if x_ms >= self.high_ms:
            return 1.0
        if x_ms < self.low_ms:
            return 0.0
        return (x_ms - self.low_ms) / (self.high_ms - self.low_ms)


def distribution(batch: Batch, previous_start: float) -> Uniform:
    interval_ms = max(0.0, (batch.start - previous_start) * 1000.0)
    low = (batch.end - batch.start) * 1000.0
    wait_ms = 0.0
    if batch.backlog_at_start and interval_ms > 0:
        rate = batch.rows / (interval_ms / 1000.0)
        if rate > 0:
            wait_ms = batch.backlog_at_start / rate * 1000.0
    return Uniform(batch.rows, low + wait_ms, low + interval_ms + wait_ms)


def distributions(batches: Sequence[Batch]) -> list[Uniform]:
    """Each batch's latency distribution. A batch without a known previous start uses the one
    before it in ``batches`` (ordered by start), else the mean gap between starts, else its own
    duration (back-to-back triggering)."""
    ordered = sorted(batches, key=lambda b: b.start)
    gap = (ordered[-1].start - ordered[0].start) / (len(ordered) - 1) if len(ordered) > 1 else None
    result = []
    for i, batch in enumerate(ordered):
        previous = batch.previous_start
        if previous is None:
            previous = ordered[i - 1].start if i > 0 else None
        if previous is None:
            previous = batch.start - (gap if gap is not None else max(0.0, batch.end - batch.start))
        result.append(distribution(batch, previous))
    return result


def mean_ms(parts: Sequence[Uniform]) -> float | None:
    weighted = [(d.rows, (d.low_ms + d.high_ms) / 2.0) for d in parts if d.rows > 0]
    total = sum(w for w, _ in weighted)
    if total <= 0:
        return None
    return sum(w * v for w, v in weighted) / total


def percentile_ms(parts: Sequence[Uniform], p: float) -> float | None:
    parts = [d for d in parts if d.rows > 0]
    total = sum(d.rows for d in parts)
    if total <= 0:
        return None
    if len(parts) == 1:
        d = parts[0]
        return d.low_ms + (p / 100.0) * (d.high_ms - d.low_ms)
    target = p / 100.0
    lo = min(d.low_ms for d in parts)
    hi = max(d.high_ms for d in parts)
    for _ in range(_BISECT_STEPS):
        if hi - lo <= 1e-9 * max(1.0, abs(hi)):
            break
        mid = (lo + hi) / 2.0
        if sum(d.rows * d.cdf(mid) for d in parts) / total >= target:
            hi = mid
        else:
            lo = mid
    return hi


def latency_ms(batches: Sequence[Batch]) -> dict[str, float] | None:
    """``{"mean", "p95", "p99"}`` in ms over ``batches``; None when they carry no rows."""
    parts = distributions(batches)
    mean = mean_ms(parts)
    if mean is None:
        return None
    p95 = percentile_ms(parts, 95.0)
    p99 = percentile_ms(parts, 99.0)
    return {
        "mean": round(mean, 3),
        "p95": round(p95 if p95 is not None else mean, 3),
        "p99": round(p99 if p99 is not None else mean, 3),
    }
