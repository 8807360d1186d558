"""/v1/rounds, /v1/cluster and /v1/capacity: what the scheduler decided, the cluster now, and
the cores the jobs need ahead (admin)."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from sqlalchemy.orm import Session

from scheduler.api import auth
from scheduler.api.deps import get_session
from scheduler.api.errors import field_error
from scheduler.api.schemas import CapacityOut, ClusterOut, JobNeedOut, RoundOut, TierNeedOut
from scheduler.api.timeparams import ROUNDS, TimeRange
from scheduler.cluster.port import ClusterSource, Holding
from scheduler.core.model import ClusterView
from scheduler.core.policies.henge.capacity_plan import CapacityPlan
from scheduler.registry import plans
from scheduler.registry import repository as repo
from scheduler.registry.tables import Job

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
    view = _cluster_view(request, repo.active_jobs(session))
    last = repo.latest_round(session)
    return ClusterOut(
        source=request.app.state.cluster_source.name,
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


@router.get("/capacity", response_model=CapacityOut)
def capacity(
    request: Request,
    horizon: float = Query(
        3600.0,
        gt=0,
        le=7 * 86400,
        description="Seconds ahead to plan for (beyond a job's forecast, its input now is held).",
    ),
    without_nodes: int = Query(
        0, ge=0, description="What if this many of the largest ready nodes were gone."
    ),
    cores: float | None = Query(
        None, ge=0, description="What if the cluster had this many cores (not with without_nodes)."
    ),
    session: Session = Depends(get_session),
    _: auth.Principal = Depends(auth.require_admin),
) -> CapacityOut:
    """The cores every admitted job's SLO needs over the horizon, per priority tier, from the
    scheduler's job models and input forecasts, against the cluster's cores or a what-if; the
    tiers and jobs that would miss, and by how many cores."""
    if without_nodes and cores is not None:
        raise field_error(422, ["cores"], "give without_nodes or cores, not both", "query")
    jobs = repo.active_jobs(session)
    view = _cluster_view(request, jobs)
    settings = request.app.state.settings
    try:
        planned = plans.what_if_cores(view, without_nodes, cores)
        now = request.app.state.clock()
        found = plans.capacity_of(session, jobs, settings, now, planned, horizon)
    except plans.NotPlanned as e:
        raise HTTPException(409, str(e)) from e
    return _capacity_out(found, horizon, request.app.state.cluster_source.name, view)


def _cluster_view(request: Request, jobs: Sequence[Job]) -> ClusterView:
    source: ClusterSource = request.app.state.cluster_source
    return source.view(
        [Holding(j.id, j.target_executors, j.executor_cores, j.executor_memory_mb) for j in jobs]
    )


def _capacity_out(
    found: CapacityPlan, horizon: float, source: str, view: ClusterView
) -> CapacityOut:
    dropped = found.first_dropped
    return CapacityOut(
        start=found.start,
        step_s=found.step_s,
        horizon_s=horizon,
        source=source,
        cluster_cores=view.total_cores,
        capacity_cores=found.capacity_cores,
        peak_cores=found.peak_cores,
        tightest_at=found.at(found.tightest),
        fits=dropped is None,
        first_dropped=dropped.priority if dropped is not None else None,
        total=list(found.total),
        tiers=[
            TierNeedOut(
                priority=t.priority,
                jobs=list(t.jobs),
                cores=list(t.cores),
                peak_cores=max(t.cores, default=0),
                short_cores=t.short_cores,
                short_at=t.short_at,
                missing=list(t.missing),
            )
            for t in found.tiers
        ],
        jobs=[
            JobNeedOut(
                job_id=j.job_id,
                name=j.name,
                tenant=j.tenant,
                priority=j.priority,
                held=j.held,
                cores_per_executor=j.cores_per_executor,
                executors=list(j.executors),
                sized=j.sized,
                note=j.note,
                forecast=j.forecast,
            )
            for j in found.jobs
        ],
    )
