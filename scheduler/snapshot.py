"""Gathering a round's :class:`~scheduler.core.model.Snapshot` from the registry and the
cluster view. Reads only; the decision is made by the pure core."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from scheduler.cluster.port import ClusterSource, Holding
from scheduler.core.metrics import window_metrics
from scheduler.core.model import JobStatus, JobView, Snapshot
from scheduler.core.report import Report
from scheduler.core.slo import slo_from_mapping
from scheduler.ingest import report_from_document
from scheduler.registry import repository as repo
from scheduler.registry.tables import Job, MetricWindow


def build_snapshot(
    session: Session,
    cluster_source: ClusterSource,
    now: datetime,
    round_number: int,
    window_s: float,
    sub_window_s: float,
) -> tuple[Snapshot, dict[str, Job]]:
    """The snapshot for round ``round_number``, and the job rows it was built from."""
    jobs = list(repo.active_jobs(session))
    ids = [j.id for j in jobs]
    # One sub-window more than the window: the backlog and batch-gap rules need the report
    # just before the window as their baseline.
    recent = repo.windows_since(session, ids, now - timedelta(seconds=window_s + sub_window_s))
    by_job: dict[str, list[MetricWindow]] = defaultdict(list)
    for row in recent:
        by_job[row.job_id].append(row)
    quiet = [i for i in ids if i not in by_job]
    newest_of_quiet = repo.latest_windows(session, quiet) if quiet else {}
    views = tuple(
        _job_view(job, by_job.get(job.id, []), newest_of_quiet.get(job.id), now, window_s)
        for job in jobs
    )
    holdings = [
        Holding(j.id, j.target_executors, j.executor_cores, j.executor_memory_mb) for j in jobs
    ]
    snapshot = Snapshot(
        round_number=round_number, jobs=views, cluster=cluster_source.view(holdings), taken_at=now
    )
    return snapshot, {j.id: j for j in jobs}


def _job_view(
    job: Job,
    windows: Sequence[MetricWindow],
    older: MetricWindow | None,
    now: datetime,
    window_s: float,
) -> JobView:
    slo = slo_from_mapping(job.slo)
    reports: list[Report] = [report_from_document(w.report) for w in windows]
    metrics = window_metrics(reports, slo, job.priority, now, window_s) if reports else None
    newest = windows[-1] if windows else older
    return JobView(
        job_id=job.id,
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
        last_report_at=newest.received_at if newest is not None else None,
        metrics=metrics,
        restart_on_resize=job.actuator == "spark-operator",
        initial_executors=job.executors_initial,
    )
