"""/v1/jobs/{id}/reports: an agent posts one metrics window and learns its job's target."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Request, status
from sqlalchemy.orm import Session

from scheduler.api import auth
from scheduler.api.deps import get_session
from scheduler.api.errors import from_registry_error
from scheduler.api.schemas import ReportAck, ReportIn
from scheduler.core.report import Report
from scheduler.ingest import derive_window, report_from_document
from scheduler.registry import repository as repo
from scheduler.registry.tables import Job, MetricWindow

router = APIRouter(prefix="/v1/jobs", tags=["reports"])


@router.post("/{job_id}/reports", response_model=ReportAck)
def post_report(
    job_id: str,
    body: ReportIn,
    request: Request,
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_agent),
) -> ReportAck:
    # An agent token is good for its own job only; any other id is "no such job".
    job = session.get(Job, job_id) if who.job_id == job_id else None
    if job is None or job.status == "removed":
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such job")
    document = body.model_dump(mode="json")
    newest = repo.newest_window(session, job.id)
    report = report_from_document(document)
    previous = report_from_document(newest.report) if newest is not None else None
    derived = {} if _is_replay(newest, report) else derive_window(job, report, previous)
    window = MetricWindow(
        job_id=job.id,
        window_start=body.window_start,
        window_end=body.window_end,
        received_at=request.app.state.clock(),
        executors=body.executors,
        report=document,
        **derived,
    )
    try:
        ingested = repo.add_window(session, window, newest)
    except repo.RegistryError as exc:
        request.app.state.metrics.report_rejected("out_of_order")
        raise from_registry_error(exc) from exc
    session.commit()
    request.app.state.metrics.report_accepted(duplicate=ingested.duplicate)
    return ReportAck(
        target_executors=job.target_executors,
        round=repo.current_round_number(session),
        duplicate=ingested.duplicate,
    )


def _is_replay(newest: MetricWindow | None, report: Report) -> bool:
    # A window at or before the newest stored one is a duplicate or out of order: either way
    # nothing new is stored, so there is nothing to derive.
    return newest is not None and report.window_end <= newest.window_end
