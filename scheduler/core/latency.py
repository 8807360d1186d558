"""Micro-batch latency estimator (DESIGN §2 "Latency", thesis §2.4).

A row's latency is the time from its arrival at the source to its result at the sink. The rows
of batch ``k`` (start ``s_k``, previous start ``s_{k-1}``, end ``e_k``) arrived between
``s_{k-1}`` and ``s_k``; with uniform arrival their latencies are uniform on
``[e_k - s_k, e_k - s_{k-1}]``, shifted up by ``backlog_at_start / arrival_rate`` when rows
were left waiting at the source. So the mean is ``e_k - (s_{k-1} + s_k)/2`` and the p-th
percentile ``e_k - s_k + (p/100)·(s_k - s_{k-1})``.

Over a window, each batch's rows count by their number: the mean is the row-weighted mean, and
a percentile is the percentile of the row-weighted mixture of the batches' distributions (for
one batch, exactly the formula above). Exact latencies measured by the job
(:class:`~scheduler.core.report.LatencyReport`) are preferred when present.

All results are in milliseconds; ``None`` when there are no rows to measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler.core.report import BatchReport, LatencyReport
from scheduler.core.slo import LatencyStat

_BISECT_STEPS = 200

STAT_PERCENTILE: dict[LatencyStat, float] = {LatencyStat.P95: 95.0, LatencyStat.P99: 99.0}


def _ms(later: datetime, earlier: datetime) -> float:
    return (later - earlier).total_seconds() * 1000.0


@dataclass(frozen=True)
class BatchLatency:
    """The latency distribution of one batch's rows: uniform on [low_ms, high_ms]."""

    rows: float
    low_ms: float
    high_ms: float

    @property
    def mean_ms(self) -> float:
        return (self.low_ms + self.high_ms) / 2.0

    def percentile_ms(self, p: float) -> float:
        return self.low_ms + (p / 100.0) * (self.high_ms - self.low_ms)

    def cdf(self, x_ms: float) -> float:
        """Fraction of the batch's rows with latency <= ``x_ms``."""
        if x_ms >= self.high_ms:
            return 1.0
        if x_ms < self.low_ms:
            return 0.0
        return (x_ms - self.low_ms) / (self.high_ms - self.low_ms)


def batch_latency(
    batch: BatchReport, previous_start: datetime, arrival_rate: float | None = None
) -> BatchLatency:
    """The latency distribution of ``batch`` given the previous batch's start.

    ``arrival_rate`` (rows/s) converts ``batch.backlog_at_start`` into waiting time; when not
    given, the batch's own rows over its arrival interval stand in for it.
    """
    interval_ms = max(0.0, _ms(batch.start, previous_start))
    low = _ms(batch.end, batch.start)
    wait_ms = 0.0
    if batch.backlog_at_start:
        rate = arrival_rate
        if rate is None and interval_ms > 0:
            rate = batch.rows / (interval_ms / 1000.0)
        if rate is not None and rate > 0:
            wait_ms = batch.backlog_at_start / rate * 1000.0
    return BatchLatency(batch.rows, low + wait_ms, low + interval_ms + wait_ms)


def batch_latencies(
    batches: Sequence[BatchReport],
    previous_start: datetime | None = None,
    arrival_rate: float | None = None,
) -> list[BatchLatency]:
    """Latency distributions of ``batches`` (taken in order of start).

    Each batch's previous start is its own ``previous_start`` if set, else the start of the batch
    before it in the sequence, else (for the first) the ``previous_start`` argument. When none of
    these is known the arrival interval is estimated as the mean gap between the batches' starts,
    or, for a lone batch, its own duration (back-to-back triggering).
    """
    ordered = sorted(batches, key=lambda b: b.start)
    result: list[BatchLatency] = []
    for i, batch in enumerate(ordered):
        prev = batch.previous_start
        if prev is None:
            prev = ordered[i - 1].start if i > 0 else previous_start
        if prev is None:
            gap_s = mean_trigger_interval_s(ordered)
            if gap_s is None:
                gap_s = max(0.0, batch.duration_s)
            prev = batch.start - timedelta(seconds=gap_s)
        result.append(batch_latency(batch, prev, arrival_rate))
    return result


def mean_trigger_interval_s(batches: Sequence[BatchReport]) -> float | None:
    """Mean gap between consecutive batch starts, or ``None`` with fewer than two batches."""
    if len(batches) < 2:
        return None
    starts = sorted(b.start for b in batches)
    return (starts[-1] - starts[0]).total_seconds() / (len(starts) - 1)


def pooled_trigger_interval_s(lists: Sequence[Sequence[BatchReport]]) -> float | None:
    """Mean gap between consecutive batch starts within each of several reports' batch lists;
    across the lists only when no list holds two batches. A report may list only its latest
    batches, so the gap from one list's last batch to the next list's first can span many
    batches (reports of the latest 12 of 50 batches put a 0.2-s trigger at 0.74 s)."""
    starts = [sorted(b.start for b in one) for one in lists if len(one) >= 2]
    if not starts:
        return mean_trigger_interval_s([b for one in lists for b in one])
    spanned = sum((s[-1] - s[0]).total_seconds() for s in starts)
    return spanned / sum(len(s) - 1 for s in starts)


def mean_latency_ms(distributions: Sequence[BatchLatency]) -> float | None:
    """Row-weighted mean latency."""
    weighted = [(d.rows, d.mean_ms) for d in distributions if d.rows > 0]
    total = sum(w for w, _ in weighted)
    if total <= 0:
        return None
    return sum(w * v for w, v in weighted) / total


def percentile_latency_ms(distributions: Sequence[BatchLatency], p: float) -> float | None:
    """The p-th percentile of the rows' latencies, over the row-weighted mixture of batches."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {p!r}")
    parts = [d for d in distributions if d.rows > 0]
    total = sum(d.rows for d in parts)
    if total <= 0:
        return None
    if len(parts) == 1:
        return parts[0].percentile_ms(p)
    target = p / 100.0
    lo = min(d.low_ms for d in parts)
    hi = max(d.high_ms for d in parts)
    if target <= 0:
        return lo
    # Smallest x whose mixture CDF reaches the target (the CDF is monotone).
    for _ in range(_BISECT_STEPS):
        if hi - lo <= 1e-9 * max(1.0, abs(hi)):
            break
        mid = (lo + hi) / 2.0
        if sum(d.rows * d.cdf(mid) for d in parts) / total >= target:
            hi = mid
        else:
            lo = mid
    return hi


def latency_stat_ms(distributions: Sequence[BatchLatency], stat: LatencyStat) -> float | None:
    """The SLO's statistic (mean / p95 / p99) over the distributions."""
    if stat is LatencyStat.MEAN:
        return mean_latency_ms(distributions)
    return percentile_latency_ms(distributions, STAT_PERCENTILE[stat])


def estimate_latency_ms(
    batches: Sequence[BatchReport],
    stat: LatencyStat = LatencyStat.MEAN,
    previous_start: datetime | None = None,
    arrival_rate: float | None = None,
) -> float | None:
    """Estimated window latency from the batches alone (see :func:`batch_latencies`)."""
    return latency_stat_ms(batch_latencies(batches, previous_start, arrival_rate), stat)


def exact_latency_ms(exact: LatencyReport | None, stat: LatencyStat) -> float | None:
    """The statistic from a job's exact measurements, if it sent that statistic."""
    if exact is None:
        return None
    if stat is LatencyStat.MEAN:
        return exact.mean
    if stat is LatencyStat.P95:
        return exact.p95
    return exact.p99


def report_latency_ms(
    exact: LatencyReport | None,
    batches: Sequence[BatchReport],
    stat: LatencyStat = LatencyStat.MEAN,
    previous_start: datetime | None = None,
    arrival_rate: float | None = None,
) -> float | None:
    """One sub-window's latency: exact when the job measured that statistic, else estimated."""
    value = exact_latency_ms(exact, stat)
    if value is not None:
        return value
    return estimate_latency_ms(batches, stat, previous_start, arrival_rate)
