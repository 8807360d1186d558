"""/v1/jobs/{id}/reports: an agent posts one metrics window and learns its job's target.

The hottest path of the service: every job reports every sub-window. So it authenticates and
loads the job in one query, runs in a single threadpool hop, and asks the registry for the
round number at most once a second.
"""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials
from sqlalchemy import select
from sqlalchemy.orm import Session

from scheduler.api import auth
from scheduler.api.deps import get_session
from scheduler.api.errors import from_registry_error
from scheduler.api.schemas import ReportAck, ReportIn
from scheduler.core.report import report_from_document
from scheduler.core.slo import slo_from_mapping
from scheduler.core.window import assess_report
from scheduler.registry import repository as repo
from scheduler.registry.tables import Job, MetricWindow

router = APIRouter(prefix="/v1/jobs", tags=["reports"])


@router.post("/{job_id}/reports", response_model=ReportAck)
def post_report(
    job_id: str,
    body: ReportIn,
    request: Request,
    session: Session = Depends(get_session),
    credentials: HTTPAuthorizationCredentials | None = Depends(auth.agent_credentials),
) -> ReportAck:
    metrics = request.app.state.metrics
    job = _agent_job(session, request, credentials)
    # An agent token is good for its own job only; any other id is "no such job".
    if job.id != job_id:
        metrics.report_rejected("unknown_job")
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such job")
    document = body.model_dump(mode="json")
    newest = repo.newest_window(session, job.id)
    report = report_from_document(document)
    replay = newest is not None and report.window_end <= newest.window_end
    if replay:
        derived = {}  # a duplicate or out of order: nothing new is stored, nothing to derive
    else:
        # Derived columns (utility, juice, latency, capacity, rates) are stored with the window;
        # the previous window gives the backlog delta and the previous batch start.
        previous = report_from_document(newest.report) if newest is not None else None
        slo = slo_from_mapping(job.slo)
        derived = dataclasses.asdict(assess_report(report, slo, job.priority, previous))
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
        metrics.report_rejected("out_of_order")
        raise from_registry_error(exc) from exc
    target = job.target_executors
    round_number = request.app.state.round_cache.get(session)
    session.commit()
    metrics.report_accepted(duplicate=ingested.duplicate)
    return ReportAck(target_executors=target, round=round_number, duplicate=ingested.duplicate)


def _agent_job(
    session: Session, request: Request, credentials: HTTPAuthorizationCredentials | None
) -> Job:
    """The job whose agent token this is (authentication and loading in one query)."""
    token = credentials.credentials if credentials is not None else ""
    job = (
        session.scalar(select(Job).where(Job.agent_token_hash == auth.hash_token(token)))
        if token.startswith(auth.AGENT_PREFIX)
        else None
    )
    if job is not None and job.status != "removed":  # a removed job's token is revoked
        return job
    request.app.state.metrics.report_rejected("unauthorized")
    who = auth.identify(session, request, token) if token else None
    if who is not None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "agent token required")
    raise auth.unauthorized("missing bearer token" if not token else "unknown token")
