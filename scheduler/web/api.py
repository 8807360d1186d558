"""``GET /v1/jobs/{id}/actions``: the actions the scheduler took on one job, for its page.

``/v1/rounds`` is the admin's; a tenant's job page needs its own job's actions, under the same
rule as the job itself (its tenant or the admin; anyone else gets 404).
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from scheduler.api import auth
from scheduler.api.deps import get_session
from scheduler.api.errors import from_registry_error
from scheduler.api.timeparams import as_utc
from scheduler.registry import repository as repo
from scheduler.registry.tables import Action, Round

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])


class JobActionOut(BaseModel):
    round: int
    at: datetime
    kind: str
    from_executors: int
    to_executors: int
    reason: str


@router.get("/{job_id}/actions", response_model=list[JobActionOut])
def job_actions(
    job_id: str,
    since: datetime | None = Query(None, description="Rounds started at or after this time."),
    until: datetime | None = Query(None, description="Rounds started at or before this time."),
    limit: int = Query(1000, ge=1, le=10_000, description="At most this many, newest first."),
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_reader),
) -> list[JobActionOut]:
    try:
        job = repo.visible_job(session, job_id, who.tenant_id)
    except repo.RegistryError as exc:
        raise from_registry_error(exc) from exc
    query = (
        select(Round.number, Round.started_at, Action)
        .join(Action, Action.round_id == Round.id)
        .where(Action.job_id == job.id)
    )
    if since is not None:
        query = query.where(Round.started_at >= as_utc(since))
    if until is not None:
        query = query.where(Round.started_at <= as_utc(until))
    rows = session.execute(query.order_by(Round.number.desc(), Action.id).limit(limit)).all()
    return [
        JobActionOut(
            round=number,
            at=started_at,
            kind=action.kind,
            from_executors=action.from_executors,
            to_executors=action.to_executors,
            reason=action.reason,
        )
        for number, started_at, action in rows
    ]
