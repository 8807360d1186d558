"""/v1/jobs/{id}/reports: an agent posts metrics windows and learns its job's target.

The hottest path of the service: every job reports every sub-window. So it authenticates and
loads the job with its newest window in one query, runs in a single threadpool hop, stores a
request's windows with one ``INSERT … ON CONFLICT DO NOTHING``, each statement committing on
its own, and asks the registry for the round number at most once a second. ``/reports`` takes
one window; ``/reports/batch`` takes several (an agent sending what it could not deliver
earlier, or a load generator), each validated and stored on its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import ValidationError
from sqlalchemy.orm import Session

from scheduler.api import auth
from scheduler.api.deps import get_report_session
from scheduler.api.errors import field_error
from scheduler.api.schemas import ReportAck, ReportBatchAck, ReportBatchIn, ReportIn, WindowResult
from scheduler.core.model import WindowValues
from scheduler.core.report import Report, report_from_document
from scheduler.core.slo import slo_from_mapping
from scheduler.core.window import assess_report
from scheduler.registry import repository as repo

router = APIRouter(prefix="/v1/jobs", tags=["reports"])


@router.post("/{job_id}/reports", response_model=ReportAck)
def post_report(
    job_id: str,
    body: ReportIn,
    request: Request,
    session: Session = Depends(get_report_session),
    credentials: HTTPAuthorizationCredentials | None = Depends(auth.agent_credentials),
) -> ReportAck:
    job = _agent_job(session, request, credentials, job_id)
    result = _ingest(session, request, job, [(body, [])])[0]
    if result.status == "rejected":
        raise HTTPException(status.HTTP_409_CONFLICT, result.detail)
    target = job.target_executors
    round_number = request.app.state.round_cache.get(session)
    _count_acknowledged(request, [result])
    return ReportAck(
        target_executors=target,
        round=round_number,
        duplicate=result.status == "duplicate",
        replace_executors=_replacing(request, job),
    )


@router.post("/{job_id}/reports/batch", response_model=ReportBatchAck)
def post_report_batch(
    job_id: str,
    body: ReportBatchIn,
    request: Request,
    session: Session = Depends(get_report_session),
    credentials: HTTPAuthorizationCredentials | None = Depends(auth.agent_credentials),
) -> ReportBatchAck:
    """Several windows of one job, oldest first, with a result per window."""
    job = _agent_job(session, request, credentials, job_id)
    windows = [
        _validated(request, raw, ["reports", index]) for index, raw in enumerate(body.reports)
    ]
    valid = [(w, ["reports", index]) for index, w in enumerate(windows) if isinstance(w, ReportIn)]
    stored = iter(_ingest(session, request, job, valid))
    results = [next(stored) if isinstance(w, ReportIn) else w for w in windows]
    target = job.target_executors
    round_number = request.app.state.round_cache.get(session)
    _count_acknowledged(request, results)
    return ReportBatchAck(
        target_executors=target,
        round=round_number,
        results=results,
        replace_executors=_replacing(request, job),
    )


def _replacing(request: Request, job: repo.AgentJob) -> list[str]:
    """The executors the last replacement asked for, while it is recent (a window's time: the
    agent reports several times in it, and stops each executor once)."""
    asked = job.replace_requested_at
    if not job.replace_executors or asked is None:
        return []
    age = (request.app.state.clock() - asked).total_seconds()
    return list(job.replace_executors) if age <= request.app.state.settings.window_s else []


def _validated(
    request: Request, raw: dict[str, Any], where: list[str | int]
) -> ReportIn | WindowResult:
    try:
        return ReportIn.model_validate(raw)
    except ValidationError as exc:
        request.app.state.metrics.report_rejected("invalid")
        errors = jsonable_encoder(exc.errors(), exclude={"input", "ctx", "url"})
        detail = [{**e, "loc": ["body", *where, *e.get("loc", ())]} for e in errors]
        return WindowResult(status="rejected", detail=detail)


def _count_acknowledged(request: Request, results: Sequence[WindowResult]) -> None:
    """Count the windows a committed request acknowledged (refusals are counted when found)."""
    metrics = request.app.state.metrics
    for result in results:
        if result.status != "rejected":
            metrics.report_accepted(duplicate=result.status == "duplicate")


@dataclass
class _Newest:
    """The job's newest window as ingestion goes along (stored, or earlier in this request)."""

    key: repo.WindowKey | None
    report: Report | None

    @property
    def end(self) -> datetime | None:
        return self.key[1] if self.key is not None else None


def _ingest(
    session: Session,
    request: Request,
    job: repo.AgentJob,
    bodies: Sequence[tuple[ReportIn, list[str | int]]],
) -> list[WindowResult]:
    """Store ``bodies`` (in order; each with where it sits in the request, for an error's
    ``loc``) after the job's newest window; one result per body.

    A window ending after the newest is stored with the values derived from it (utility, juice,
    latency, capacity, rates; the window before it gives the backlog delta and the previous batch
    start). The same window again is a duplicate; any other window ending no later than the
    newest is refused: reports must arrive in order.
    """
    metrics = request.app.state.metrics
    received = request.app.state.clock()
    newest = _Newest(
        job.newest,
        report_from_document(job.newest_report) if job.newest_report is not None else None,
    )
    slo = slo_from_mapping(job.slo)
    keys: dict[repo.WindowKey, int] = {}
    rows: list[dict[str, Any]] = []
    results: list[WindowResult] = []
    for body, where in bodies:
        key = (body.window_start, body.window_end)
        if newest.end is not None and body.window_end <= newest.end:
            seen = key in keys or key == newest.key
            result = _old_window(session, job.id, key, seen, newest.end, where)
            if result.status == "rejected":
                metrics.report_rejected("out_of_order")
            results.append(result)
            continue
        document = body.model_dump(mode="json")
        report = report_from_document(document)
        derived = _columns(assess_report(report, slo, job.priority, newest.report))
        keys[key] = len(results)
        results.append(WindowResult(status="stored", window_end=body.window_end))
        rows.append(
            {
                "job_id": job.id,
                "window_start": body.window_start,
                "window_end": body.window_end,
                "received_at": received,
                "executors": body.executors,
                "report": document,
                **derived,
            }
        )
        newest = _Newest(key, report)
    inserted = repo.insert_windows(session, rows)
    for key, index in keys.items():
        if key not in inserted:  # stored meanwhile by a concurrent request of the same agent
            results[index] = WindowResult(status="duplicate", window_end=key[1])
    return results


def _columns(values: WindowValues) -> dict[str, float | None]:
    """The values as the window's columns (a flat dataclass: no deep copy needed)."""
    return {f.name: getattr(values, f.name) for f in dataclasses.fields(values)}


def _old_window(
    session: Session,
    job_id: str,
    key: repo.WindowKey,
    seen: bool,
    newest_end: datetime,
    where: list[str | int],
) -> WindowResult:
    """The result for a window ending no later than the newest one: a duplicate (``seen``:
    known without asking the registry) or refused."""
    start, end = key
    if seen or repo.window_stored(session, job_id, start, end):
        return WindowResult(status="duplicate", window_end=end)
    message = (
        f"window_end {end.isoformat()} is not after the newest stored window "
        f"({newest_end.isoformat()}): reports must arrive in order"
    )
    error = field_error(status.HTTP_409_CONFLICT, [*where, "window_end"], message)
    return WindowResult(status="rejected", window_end=end, detail=error.detail)


def _agent_job(
    session: Session,
    request: Request,
    credentials: HTTPAuthorizationCredentials | None,
    job_id: str,
) -> repo.AgentJob:
    """The job whose agent token this is, with its newest window (authentication and loading
    in one query); an agent token is good for its own job only, any other id is "no such
    job"."""
    token = credentials.credentials if credentials is not None else ""
    found = (
        repo.agent_job(session, auth.hash_token(token))
        if token.startswith(auth.AGENT_PREFIX)
        else None
    )
    metrics = request.app.state.metrics
    if found is not None and found.status != "removed":  # a removed job's token is revoked
        if found.id != job_id:
            metrics.report_rejected("unknown_job")
            raise HTTPException(status.HTTP_404_NOT_FOUND, "no such job")
        return found
    metrics.report_rejected("unauthorized")
    who = auth.identify(session, request, token) if token else None
    if who is not None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "agent token required")
    raise auth.unauthorized("missing bearer token" if not token else "unknown token")
