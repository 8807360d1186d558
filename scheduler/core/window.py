"""From agent reports to a job's metrics (DESIGN §2).

- :func:`assess_report`: the values derived from one report (one sub-window), stored with it.
- :func:`window_metrics`: the sliding window over the latest reports, the :class:`JobMetrics` a
  scheduling round decides from. Counts are aggregated over the window (rows summed, then
  divided), never averaged as ratios.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TypedDict

from scheduler.core.capacity import capacity
from scheduler.core.juice import (
    Edge,
    SourceFlow,
    clamp_juice,
    flows_juice,
    source_flows,
    topology_juice,
)
from scheduler.core.latency import (
    batch_latencies,
    exact_latency_ms,
    latency_stat_ms,
    pooled_trigger_interval_s,
    report_latency_ms,
)
from scheduler.core.model import BatchFit, JobMetrics, WindowValues
from scheduler.core.report import BatchReport, Report, TaskWindow
from scheduler.core.slo import SLO, utility

BEHIND_EPSILON = 0.01
"""A sub-window counts as "behind" when its raw juice is below ``1 - BEHIND_EPSILON``."""


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


class _Judged(TypedDict):
    utility: float
    juice: float | None
    juice_raw: float | None
    latency_ms: float | None


def _judged(
    slo: SLO, priority: float, juice: tuple[float, float] | None, latency: float | None
) -> _Judged:
    """Utility with the juice (raw, clamped) and latency it is judged on."""
    juice_value = juice[1] if juice is not None else None
    return {
        "utility": utility(slo, priority, juice_value, latency),
        "juice": juice_value,
        "juice_raw": juice[0] if juice is not None else None,
        "latency_ms": latency,
    }


def _backlogs(report: Report | None) -> dict[str, float]:
    if report is None:
        return {}
    return {s.name: s.backlog_rows for s in report.sources if s.backlog_rows is not None}


def _last_batch_start(report: Report | None) -> datetime | None:
    if report is None or not report.batches:
        return None
    return max(b.start for b in report.batches)


def _rate(rows: float | None, seconds: float) -> float | None:
    if rows is None or seconds <= 0:
        return None
    return rows / seconds


def _sum_edges(reports: Iterable[Report]) -> list[Edge]:
    """Edges of several sub-windows with their counts summed per (parent, child)."""
    sent: dict[tuple[str, str], float] = {}
    executed: dict[tuple[str, str], float] = {}
    for report in reports:
        for e in report.edges:
            key = (e.parent, e.child)
            sent[key] = sent.get(key, 0.0) + e.sent
            executed[key] = executed.get(key, 0.0) + e.executed
    return [Edge(p, c, sent[(p, c)], executed[(p, c)]) for p, c in sent]


def _edge_input_rows(edges: Sequence[Edge]) -> float | None:
    """Tuples sent by the graph's sources (operators with no incoming edge)."""
    if not edges:
        return None
    children = {e.child for e in edges}
    return math.fsum(e.sent for e in edges if e.parent not in children)


def _arrived_rows(flows: Mapping[str, SourceFlow], edges: Sequence[Edge]) -> float | None:
    if flows:
        return math.fsum(f.arrived for f in flows.values())
    return _edge_input_rows(edges)


def _juice(edges: Sequence[Edge], flows: Mapping[str, SourceFlow]) -> tuple[float, float] | None:
    """(raw, clamped): the general form when edges are reported, else the micro-batch form."""
    if edges:
        raw = topology_juice(edges)
        return raw, clamp_juice(raw)
    return flows_juice(flows.values())


def _report_rows(report: Report) -> float:
    """Rows a report's latency describes: its batches' rows, else its sources' rows."""
    if report.batches:
        return sum(b.rows for b in report.batches)
    return report.processed_rows


def _weighted_mean(pairs: Iterable[tuple[float, float]]) -> float | None:
    items = [(w, v) for w, v in pairs if w > 0]
    total = sum(w for w, _ in items)
    if total <= 0:
        return None
    return sum(w * v for w, v in items) / total


# --------------------------------------------------------------------------------------------
# One report
# --------------------------------------------------------------------------------------------


def assess_report(
    report: Report, slo: SLO, priority: float, previous: Report | None = None
) -> WindowValues:
    """The values of one sub-window.

    ``previous`` is the job's report before this one, when there is one: its backlogs give the
    Δbacklog for sources that do not count their arrivals, and its last batch start is the
    previous start of this report's first batch (DESIGN §2 "Latency").
    """
    seconds = report.duration_s
    edges = list(report.edges)
    flows = source_flows(report.sources, _backlogs(previous))
    juice = _juice(edges, flows)
    input_rate = _rate(_arrived_rows(flows, edges), seconds)
    processed = report.processed_rows if (report.sources or report.batches) else None
    latency = report_latency_ms(
        report.latency_ms,
        report.batches,
        slo.latency_stat,
        previous_start=_last_batch_start(previous),
        arrival_rate=input_rate,
    )
    return WindowValues(
        **_judged(slo, priority, juice, latency),
        capacity=capacity(report.busy_core_ms, report.duration_ms, report.total_cores),
        input_rate=input_rate,
        processed_rate=_rate(processed, seconds),
    )


# --------------------------------------------------------------------------------------------
# The sliding window
# --------------------------------------------------------------------------------------------


def select_window(
    reports: Iterable[Report], now: datetime, window_s: float
) -> tuple[list[Report], Report | None]:
    """Reports with ``now - window_s < window_end <= now`` (oldest first), and the newest report
    before the window (the baseline for backlog deltas and batch starts), if any."""
    cutoff = now - timedelta(seconds=window_s)
    ordered = sorted(reports, key=lambda r: (r.window_end, r.window_start))
    inside = [r for r in ordered if cutoff < r.window_end <= now]
    before = [r for r in ordered if r.window_end <= cutoff]
    return inside, (before[-1] if before else None)


def _window_latency(
    reports: Sequence[Report],
    baseline: Report | None,
    slo: SLO,
    arrival_rate: float | None,
) -> float | None:
    stat = slo.latency_stat
    previous_start = _last_batch_start(baseline)
    if all(exact_latency_ms(r.latency_ms, stat) is None for r in reports):
        # Estimated throughout: the statistic over all the window's batches, weighted by rows.
        batches: list[BatchReport] = [b for r in reports for b in r.batches]
        return latency_stat_ms(batch_latencies(batches, previous_start, arrival_rate), stat)
    # Some exact values: combine per sub-window values, weighted by their rows.
    pairs: list[tuple[float, float]] = []
    for report in reports:
        value = report_latency_ms(
            report.latency_ms, report.batches, stat, previous_start, arrival_rate
        )
        if value is not None:
            pairs.append((_report_rows(report), value))
        previous_start = _last_batch_start(report) or previous_start
    return _weighted_mean(pairs)


def _behind_fraction(
    reports: Sequence[Report], baseline: Report | None, epsilon: float
) -> float | None:
    behind = 0
    known = 0
    previous = baseline
    for report in reports:
        juice = _juice(list(report.edges), source_flows(report.sources, _backlogs(previous)))
        previous = report
        if juice is None:
            continue
        known += 1
        if juice[0] < 1.0 - epsilon:
            behind += 1
    return behind / known if known else None


SPREAD = 1.5
"""Batch sizes must span this factor (largest over smallest) to fit the per-batch overhead."""


def batch_fit(batches: Sequence[BatchReport]) -> BatchFit | None:
    """Batch duration against rows by least squares, or ``None`` when fewer than three batches
    or sizes too alike to separate the fixed part from the per-row part."""
    sized = [(b.rows, b.duration_s) for b in batches if b.rows > 0]
    if len(sized) < 3:
        return None
    rows = [r for r, _ in sized]
    if max(rows) < SPREAD * min(rows):
        return None
    n = len(sized)
    mean_rows = sum(rows) / n
    mean_s = sum(d for _, d in sized) / n
    spread = sum((r - mean_rows) ** 2 for r in rows)
    slope = sum((r - mean_rows) * (d - mean_s) for r, d in sized) / spread
    return BatchFit(max(0.0, mean_s - slope * mean_rows), slope)


def window_metrics(
    reports: Sequence[Report],
    slo: SLO,
    priority: float,
    now: datetime,
    window_s: float = 60.0,
    *,
    behind_epsilon: float = BEHIND_EPSILON,
) -> JobMetrics | None:
    """A job's metrics over the sliding window ending at ``now``; ``None`` without reports in it.

    ``reports`` may include older ones: the newest report before the window serves only as the
    baseline for backlog deltas and the previous batch start.
    """
    inside, baseline = select_window(reports, now, window_s)
    if not inside:
        return None
    latest = inside[-1]
    seconds = sum(max(0.0, r.duration_s) for r in inside)

    edge_reports = [r for r in inside if r.edges]
    edges = _sum_edges(edge_reports)
    flows = source_flows([s for r in inside for s in r.sources], _backlogs(baseline))
    juice = _juice(edges, flows)
    input_rate = _rate(_arrived_rows(flows, edges), seconds)
    has_counts = any(r.sources or r.batches for r in inside)
    processed_rate = _rate(sum(r.processed_rows for r in inside), seconds) if has_counts else None

    latency = _window_latency(inside, baseline, slo, input_rate)

    core_ms = sum(max(0.0, r.duration_ms) * r.total_cores for r in inside)
    busy_ms = sum(r.busy_core_ms for r in inside)
    window_capacity = capacity(busy_ms, core_ms, 1) if core_ms > 0 else None

    backlog: float | None = None
    for report in reversed(inside):
        values = [s.backlog_rows for s in report.sources if s.backlog_rows is not None]
        if values:
            backlog = sum(values)
            break

    max_parallelism = next(
        (r.max_parallelism for r in reversed(inside) if r.max_parallelism is not None), None
    )
    batches = [b for r in inside for b in r.batches]
    mean_batch_s = sum(b.duration_s for b in batches) / len(batches) if batches else None

    return JobMetrics(
        **_judged(slo, priority, juice, latency),
        capacity=window_capacity,
        input_rate=input_rate,
        processed_rate=processed_rate,
        backlog_rows=backlog,
        max_parallelism=max_parallelism,
        busy_core_s=busy_ms / 1000.0,
        mean_batch_s=mean_batch_s,
        mean_batch_rows=sum(b.rows for b in batches) / len(batches) if batches else None,
        batch_fit=batch_fit(batches),
        trigger_interval_s=pooled_trigger_interval_s([r.batches for r in inside]),
        behind_fraction=_behind_fraction(inside, baseline, behind_epsilon),
        executors_reported=latest.executors,
        steady=len({r.executors for r in inside}) == 1,
        windows=len(inside),
        seconds=seconds,
        task_windows=tuple(
            TaskWindow(r.executor_tasks, r.stages) for r in inside if r.executor_tasks or r.stages
        ),
        holds_state=next(
            (r.holds_state for r in reversed(inside) if r.holds_state is not None), None
        ),
    )
