"""/v1/rounds and /v1/cluster: what the scheduler decided, and the cluster now (admin)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session

from scheduler.api import auth
from scheduler.api.deps import get_session
from scheduler.api.schemas import ClusterOut, RoundOut
from scheduler.api.timeparams import ROUNDS, TimeRange
from scheduler.cluster.port import Holding
from scheduler.registry import repository as repo

router = APIRouter(prefix="/v1", tags=["scheduler"])


@router.get("/rounds", response_model=list[RoundOut])
def list_rounds(
    span: TimeRange = Depends(ROUNDS),
    session: Session = Depends(get_session),
    _: auth.Principal = Depends(auth.require_admin),
) -> list[RoundOut]:
    return [
        RoundOut(**vars(record), actions=tuple(actions))
        for record, actions in repo.list_rounds(session, span.since, span.until, span.limit)
    ]


@router.get("/cluster", response_model=ClusterOut)
def cluster(
    request: Request,
    session: Session = Depends(get_session),
    _: auth.Principal = Depends(auth.require_admin),
) -> ClusterOut:
    jobs = repo.active_jobs(session)
    source = request.app.state.cluster_source
    view = source.view(
        [Holding(j.id, j.target_executors, j.executor_cores, j.executor_memory_mb) for j in jobs]
    )
    last = repo.latest_round(session)
    return ClusterOut(
        source=source.name,
        nodes=len(view.nodes),
        total_cores=view.total_cores,
        allocated_cores=view.total_cores - view.free_cores,
        free_cores=view.free_cores,
        state=last.state if last else "not_converged",
        policy=last.policy if last else request.app.state.settings.policy,
        last_round=last.number if last else None,
        total_utility=last.total_utility if last else 0.0,
        max_utility=last.max_utility if last else 0.0,
        jobs=repo.job_counts(session),
    )
