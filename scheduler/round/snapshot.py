"""Gathering a round's :class:`~scheduler.core.model.Snapshot` through the round store and the
cluster view. Reads only; the decision is made by the pure core."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from scheduler.cluster.port import ClusterSource, Holding
from scheduler.core.model import InputForecast, JobStatus, JobView, Snapshot
from scheduler.core.slo import slo_from_mapping
from scheduler.core.window import window_metrics
from scheduler.round.store import JobRecord, ReportRecord, RoundTx


def build_snapshot(
    tx: RoundTx,
    cluster_source: ClusterSource,
    jobs: Sequence[JobRecord],
    now: datetime,
    round_number: int,
    window_s: float,
    sub_window_s: float,
    forecasts: Mapping[str, InputForecast] | None = None,
    *,
    can_replace: bool = True,
) -> Snapshot:
    """The snapshot for round ``round_number`` of ``jobs``, with their input ``forecasts``;
    ``can_replace``: whether the realizer can replace executors."""
    views = job_views(tx, jobs, now, window_s, sub_window_s, forecasts)
    holdings = [
        Holding(j.job_id, j.target_executors, j.executor_cores, j.executor_memory_mb) for j in jobs
    ]
    return Snapshot(
        round_number=round_number,
        jobs=views,
        cluster=cluster_source.view(holdings),
        taken_at=now,
        can_replace=can_replace,
    )


def job_views(
    tx: RoundTx,
    jobs: Sequence[JobRecord],
    now: datetime,
    window_s: float,
    sub_window_s: float,
    forecasts: Mapping[str, InputForecast] | None = None,
) -> tuple[JobView, ...]:
    """Each of ``jobs`` as a round sees it at ``now``: its sliding-window metrics from its recent
    reports, and its input forecast from ``forecasts``."""
    ids = [j.job_id for j in jobs]
    # One sub-window more than the window: the backlog and batch-gap rules need the report
    # just before the window as their baseline.
    span_s = window_s + sub_window_s
    # Only windows within the span of a job's newest one can count (on its agent's clock), and
    # however short an agent's sub-window, a job's reading is capped at ten times what one
    # report per sub-window gives: a job posting far more (a runaway agent, a load test) cannot
    # slow every round.
    newest = 10 * (math.ceil(span_s / sub_window_s) + 1)
    recent = tx.reports_since(ids, now - timedelta(seconds=span_s), span_s, newest)
    quiet = [i for i in ids if not recent.get(i)]
    last_seen = tx.last_report_at(quiet) if quiet else {}
    forecasts = forecasts or {}
    return tuple(
        job_view(job, recent.get(job.job_id, ()), last_seen.get(job.job_id), now, window_s,
                 forecasts.get(job.job_id))
        for job in jobs
    )  # fmt: skip


def job_view(
    job: JobRecord,
    reports: Sequence[ReportRecord],
    last_seen: datetime | None,
    now: datetime,
    window_s: float,
    forecast: InputForecast | None = None,
) -> JobView:
    slo = slo_from_mapping(job.slo)
    metrics = None
    if reports:
        # The windows are on the agent's clock, which may be off: the sliding window ends at
        # ``now`` on that clock. The offset is the smallest any recent report arrived with (a
        # report delivered late, after an outage say, would count its delay as skew).
        offset = min(r.received_at - r.report.window_end for r in reports)
        agent_now = now - offset
        windows = [r.report for r in reports]
        metrics = window_metrics(windows, slo, job.priority, agent_now, window_s)
    return JobView(
        job_id=job.job_id,
        name=job.name,
        tenant=job.tenant_id,
        priority=job.priority,
        slo=slo,
        status=JobStatus(job.status),
        executors=job.target_executors,
        min_executors=job.executors_min,
        max_executors=job.executors_max,
        cores_per_executor=job.executor_cores,
        memory_mb=job.executor_memory_mb,
        registered_at=job.created_at,
        last_report_at=reports[-1].received_at if reports else last_seen,
        metrics=metrics,
        restart_on_resize=job.actuator == "spark-operator",
        initial_executors=job.executors_initial,
        forecast=forecast,
    )
