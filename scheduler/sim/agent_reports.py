"""Micro-batches as the agent reports them: the batch record, the latency of its rows, and the
report document of one sub-window (DESIGN §5.1)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

MAX_REPORTED_BATCHES = 12
"""A report lists at most this many batches (the latest). With a trigger of 1 s or more and
10 s sub-windows every batch is listed; counts and latency always cover all of them."""

SOURCE = "events"
"""The name of every simulated job's one source."""


class SimulatedBatch(NamedTuple):
    """One micro-batch, times in simulated seconds."""

    start: float
    end: float
    rows: float
    first_arrival: float
    """When the batch's oldest row arrived at the source."""
    last_arrival: float
    """When its newest row arrived."""
    left_waiting: float
    """Rows at the source the batch did not take (``max_rows_per_batch``)."""
    busy_core_ms: float
    compute_start: float
    compute_end: float
    work_rows: float
    """Rows still to compute at ``compute_start``, times the batch's noise factor."""
    executors: int
    """Running executors the compute span was planned with."""
    speed: float
    """Their mean speed (1 / slowdown)."""
    slowest: float
    """The slowest one's speed."""


class Clock:
    """Simulated seconds to timezone-aware datetimes."""

    def __init__(self, epoch: datetime) -> None:
        self.epoch = epoch
        self._ts = epoch.timestamp()
        self._tz = epoch.tzinfo or UTC
        self._memo: dict[float, datetime] = {}
        """Recent conversions: jobs on the same trigger grid share their batch start times."""

    def at(self, seconds: float) -> datetime:
        return datetime.fromtimestamp(self._ts + seconds, self._tz)

    def shared(self, seconds: float) -> datetime:
        """:meth:`at`, remembered: for times many jobs report (windows, trigger points)."""
        value = self._memo.get(seconds)
        if value is None:
            if len(self._memo) > 4096:
                self._memo.clear()
            value = self._memo[seconds] = datetime.fromtimestamp(self._ts + seconds, self._tz)
        return value


def busy_in(batches: Sequence[SimulatedBatch], w0: float, w1: float) -> float:
    """Core-ms the batches kept executors busy inside ``[w0, w1)``; each batch's busy time is
    spread evenly over its compute span."""
    total = 0.0
    for b in batches:
        span = b.compute_end - b.compute_start
        if span <= 0:
            continue
        overlap = min(b.compute_end, w1) - max(b.compute_start, w0)
        if overlap > 0:
            total += b.busy_core_ms * overlap / span
    return total


def batch_documents(batches: Sequence[SimulatedBatch], clock: Clock) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for b in batches[-MAX_REPORTED_BATCHES:]:
        doc: dict[str, Any] = {
            "start": clock.shared(b.start),
            "end": clock.at(b.end),
            "rows": b.rows,
        }
        if b.left_waiting > 0:
            doc["backlog_at_start"] = b.left_waiting
        docs.append(doc)
    return docs


def latency_summary(batches: Sequence[SimulatedBatch]) -> tuple[float, dict[str, float] | None]:
    """The batches' rows, and their row-weighted mean, p95 and p99 latency in ms (``None``
    without rows). A batch's rows arrived uniformly between its first and last arrival, so
    their latencies are uniform on ``[end - last_arrival, end - first_arrival]``."""
    parts = [(b.rows, b.end - b.last_arrival, b.end - b.first_arrival) for b in batches]
    total = 0.0
    weighted = 0.0
    for rows, lo, hi in parts:
        total += rows
        weighted += rows * (lo + hi)
    if total <= 0:
        return total, None
    p95, p99 = tail_quantiles(parts, total, (0.95, 0.99))
    mean = weighted / (2.0 * total)
    return total, {"mean": mean * 1000.0, "p95": p95 * 1000.0, "p99": p99 * 1000.0}


def tail_quantiles(
    parts: Sequence[tuple[float, float, float]], total: float, quantiles: Sequence[float]
) -> list[float]:
    """Quantiles (ascending) of a row-weighted mixture of uniforms ``(rows, low, high)``.

    Sweeps the breakpoints from the top, keeping the mass above the sweep point and its slope
    (rows per second of latency), so each quantile is found inside one linear piece. When the
    part with the highest ``low`` alone holds the lowest quantile's tail mass (the usual case:
    batches of similar size and duration), every quantile lies above all the ``low`` points and
    only the ``high`` points need sweeping.
    """
    if len(parts) == 1:
        _, lo, hi = parts[0]
        return [lo + q * (hi - lo) for q in quantiles]
    events: list[tuple[float, float, float]] = []  # (x, slope change below x, point mass at x)
    for rows, lo, hi in parts:
        if hi - lo > 1e-12:
            events.append((hi, rows / (hi - lo), 0.0))
        elif rows > 0:
            events.append((hi, 0.0, rows))
    top = max(parts, key=lambda p: p[1])
    if top[0] < (1.0 - quantiles[0]) * total:
        events.extend((lo, -rows / (hi - lo), 0.0) for rows, lo, hi in parts if hi - lo > 1e-12)
    events.sort(reverse=True)
    return _sweep(events, [(1.0 - q) * total for q in reversed(quantiles)])[::-1]


def _sweep(events: list[tuple[float, float, float]], targets: list[float]) -> list[float]:
    """The points (descending) at which the mass above reaches each target (ascending)."""
    wanted = len(targets)
    found: list[float] = []
    mass = slope = 0.0
    x = events[0][0]
    for at, change, point in events:
        reached = mass + slope * (x - at)
        while reached >= targets[len(found)]:
            need = targets[len(found)] - mass
            found.append(x - need / slope if slope > 0 else at)
            if len(found) == wanted:
                return found
        mass = reached + point
        x = at
        slope += change
        while mass >= targets[len(found)]:
            found.append(at)
            if len(found) == wanted:
                return found
    found.extend([x] * (wanted - len(found)))
    return found
