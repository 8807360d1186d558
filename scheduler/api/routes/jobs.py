"""/v1/jobs: tenants register, read, change and remove their jobs; the admin sees all."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from sqlalchemy.orm import Session

from scheduler.api import auth
from scheduler.api.deps import get_session
from scheduler.api.errors import from_registry_error, from_slo_error
from scheduler.api.schemas import (
    ExecutorLookOut,
    ExecutorsIn,
    ExecutorsOut,
    HistoryPoint,
    InputMinuteOut,
    JobActionOut,
    JobCreate,
    JobCreated,
    JobDiagnosisOut,
    JobForecastOut,
    JobHistory,
    JobInput,
    JobOptionsOut,
    JobOut,
    JobPatch,
    OptionOut,
    OutcomeOut,
    PeakOut,
    SLOIn,
    StageLookOut,
)
from scheduler.api.timeparams import ACTIONS, MINUTES, WINDOWS, TimeRange
from scheduler.core.policies.henge.remedies import executors_for
from scheduler.core.slo import SLOError, slo_from_mapping, validate_slo
from scheduler.registry import forecasts, history, plans
from scheduler.registry import repository as repo
from scheduler.registry.tables import Job, MetricWindow

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

QUEUED_REASON = "waiting for admission by the next scheduling round"


def slo_document(slo: SLOIn) -> dict[str, Any]:
    """The stored form of an SLO, checked by the core (monotone shapes, reachable threshold)."""
    document = slo.model_dump(mode="json", exclude_none=True)
    try:
        validate_slo(slo_from_mapping(document))
    except SLOError as exc:
        raise from_slo_error(exc) from exc
    return document


def job_out(job: Job, window: MetricWindow | None) -> JobOut:
    return JobOut(
        id=job.id,
        tenant_id=job.tenant_id,
        name=job.name,
        priority=job.priority,
        slo=job.slo,
        executors=ExecutorsOut(
            initial=job.executors_initial,
            min=job.executors_min,
            max=job.executors_max,
            cores=job.executor_cores,
            memory_mb=job.executor_memory_mb,
            target=job.target_executors,
        ),
        actuator=job.actuator,
        status=job.status,
        status_reason=job.status_reason,
        utility=window.utility if window else None,
        juice=window.juice if window else None,
        latency_ms=window.latency_ms if window else None,
        capacity=window.capacity if window else None,
        last_report_at=window.received_at if window else None,
        created_at=job.created_at,
        updated_at=job.updated_at,
    )


def _apply_executors(job: Job, executors: ExecutorsIn) -> None:
    job.executors_initial = executors.initial
    job.executors_min = executors.min
    job.executors_max = executors.max
    job.executor_cores = executors.cores
    job.executor_memory_mb = executors.memory_mb
    # A lower maximum takes effect at once (giving executors back always fits); a higher
    # minimum is met by the next round, as far as the cluster has room.
    if job.status == "admitted":
        job.target_executors = min(job.target_executors, executors.max)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=JobCreated)
def register_job(
    body: JobCreate,
    request: Request,
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_tenant),
) -> JobCreated:
    now: datetime = request.app.state.clock()
    token = auth.new_token(auth.AGENT_PREFIX)
    job = Job(
        id=repo.new_id(),
        tenant_id=who.tenant_id,
        name=body.name,
        priority=body.priority,
        slo=slo_document(body.slo),
        actuator=body.actuator,
        status="queued",
        status_reason=QUEUED_REASON,
        agent_token_hash=auth.hash_token(token),
        # A queued job's agent is told to hold no executors until admission.
        target_executors=0,
        created_at=now,
        updated_at=now,
    )
    _apply_executors(job, body.executors)
    try:
        repo.add_job(session, job)
    except repo.RegistryError as exc:
        raise from_registry_error(exc) from exc
    session.commit()
    return JobCreated(**job_out(job, None).model_dump(), agent_token=token)


@router.get("", response_model=list[JobOut])
def list_jobs(
    session: Session = Depends(get_session), who: auth.Principal = Depends(auth.require_reader)
) -> list[JobOut]:
    jobs = repo.list_jobs(session, who.tenant_id)
    windows = repo.latest_windows(session, [j.id for j in jobs])
    return [job_out(job, windows.get(job.id)) for job in jobs]


def _visible(session: Session, job_id: str, who: auth.Principal) -> Job:
    try:
        return repo.visible_job(session, job_id, who.tenant_id)
    except repo.RegistryError as exc:
        raise from_registry_error(exc) from exc


@router.get("/{job_id}", response_model=JobOut)
def show_job(
    job_id: str,
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_reader),
) -> JobOut:
    job = _visible(session, job_id, who)
    return job_out(job, repo.latest_windows(session, [job.id]).get(job.id))


@router.patch("/{job_id}", response_model=JobOut)
def change_job(
    job_id: str,
    body: JobPatch,
    request: Request,
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_reader),
) -> JobOut:
    job = _visible(session, job_id, who)
    if body.priority is not None:
        job.priority = body.priority
    if body.slo is not None:
        job.slo = slo_document(body.slo)
    if body.executors is not None:
        _apply_executors(job, body.executors)
    if body.actuator is not None:
        job.actuator = body.actuator
    job.updated_at = request.app.state.clock()
    session.commit()
    return job_out(job, repo.latest_windows(session, [job.id]).get(job.id))


@router.delete("/{job_id}", status_code=status.HTTP_204_NO_CONTENT)
def remove_job(
    job_id: str,
    request: Request,
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_reader),
) -> Response:
    job = _visible(session, job_id, who)
    now = request.app.state.clock()
    job.status, job.status_reason = "removed", "deregistered"
    job.target_executors = 0
    job.removed_at = job.updated_at = now
    session.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{job_id}/history", response_model=JobHistory)
def job_history(
    job_id: str,
    span: TimeRange = Depends(WINDOWS),
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_reader),
) -> JobHistory:
    """The job's metric windows in the range, oldest first (the newest ``limit`` of them)."""
    job = _visible(session, job_id, who)
    rows = repo.history(session, job.id, span.since, span.until, span.limit)
    return JobHistory(
        job_id=job.id,
        points=[HistoryPoint.model_validate(row, from_attributes=True) for row in rows],
    )


@router.get("/{job_id}/input", response_model=JobInput)
def job_input(
    job_id: str,
    span: TimeRange = Depends(MINUTES),
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_reader),
) -> JobInput:
    """The job's input per minute in the range, oldest first (the newest ``limit`` minutes),
    kept for ``HENGE_HISTORY_DAYS``: what its forecasts are fitted on."""
    job = _visible(session, job_id, who)
    found = history.input_minutes(session, job.id, span.since, span.until, span.limit)
    return JobInput(
        job_id=job.id,
        minutes=[InputMinuteOut.model_validate(m, from_attributes=True) for m in found],
    )


@router.get("/{job_id}/forecast", response_model=JobForecastOut)
def job_forecast(
    job_id: str,
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_reader),
) -> JobForecastOut:
    """The job's latest input forecast (fitted every ``HENGE_FORECAST_INTERVAL_S`` from its
    input history) and how it has done since; 404 until one has been fitted."""
    job = _visible(session, job_id, who)
    stored = forecasts.stored_forecast(session, job.id)
    if stored is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"job {job.id} has no forecast yet")
    forecast = stored.forecast
    return JobForecastOut(
        job_id=job.id,
        fitted_at=stored.fitted_at,
        start=forecast.start,
        step_s=forecast.step_s,
        method=forecast.method,
        mean=list(forecast.mean),
        upper=list(forecast.upper),
        naive=list(forecast.naive),
        error=forecast.error,
        recent_error=stored.recent_error,
        trusted=stored.trusted,
    )


@router.get("/{job_id}/options", response_model=JobOptionsOut)
def job_options(
    job_id: str,
    request: Request,
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_reader),
) -> JobOptionsOut:
    """What each executor count would give the job (predicted juice, latency and utility now
    and at its forecast's peak, core-hours a day), with the smallest counts that meet its SLO;
    no numbers while the scheduler's model of the job is not trusted."""
    job = _visible(session, job_id, who)
    found = plans.options_of(session, job, request.app.state.settings, request.app.state.clock())
    peak = found.peak
    return JobOptionsOut(
        job_id=found.job_id,
        trusted=found.trusted,
        reason=found.reason,
        input_rate=found.input_rate,
        peak=PeakOut(input_rate=peak.rate, at=peak.at, trusted=peak.trusted) if peak else None,
        held=found.held,
        meets_now=found.meets_now,
        meets_peak=found.meets_peak,
        options=[
            OptionOut(
                executors=o.executors,
                now=OutcomeOut(**dataclasses.asdict(o.now)),
                peak=OutcomeOut(**dataclasses.asdict(o.peak)) if o.peak is not None else None,
                core_hours_per_day=o.core_hours_per_day,
            )
            for o in found.options
        ],
    )


@router.get("/{job_id}/diagnosis", response_model=JobDiagnosisOut)
def job_diagnosis(
    job_id: str,
    request: Request,
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_reader),
) -> JobDiagnosisOut:
    """Why the job runs as it does, from its agent's task figures: a slow executor (named, with
    its node), a skewed stage (named, with how uneven, and whether more executors can help), or
    neither; and what the scheduler does about it."""
    job = _visible(session, job_id, who)
    found = plans.diagnosis_of(session, job, request.app.state.settings, request.app.state.clock())
    d = found.diagnosis
    cores = job.executor_cores
    useful = d.useful_cores if d is not None else None
    return JobDiagnosisOut(
        job_id=found.job_id,
        finding=d.finding.value if d is not None else None,
        reason=d.reason if d is not None else None,
        acted_on=found.acted_on,
        note=found.note,
        slow_executors=list(d.executors) if d is not None else [],
        hosts=list(d.hosts) if d is not None else [],
        stage=d.stage if d is not None else None,
        factor=d.factor if d is not None else None,
        useful_executors=executors_for(useful, cores) if useful is not None else None,
        windows=found.windows,
        executors=[ExecutorLookOut(**dataclasses.asdict(e)) for e in found.executors],
        stages=[StageLookOut(**dataclasses.asdict(s)) for s in found.stages],
    )


@router.get("/{job_id}/actions", response_model=list[JobActionOut])
def job_actions(
    job_id: str,
    span: TimeRange = Depends(ACTIONS),
    session: Session = Depends(get_session),
    who: auth.Principal = Depends(auth.require_reader),
) -> list[JobActionOut]:
    """The actions the scheduler took on one job: its tenant's job page marks them, under the
    same rule as the job itself (its tenant or the admin; anyone else gets 404)."""
    job = _visible(session, job_id, who)
    rows = repo.job_actions(session, job.id, span.since, span.until, span.limit)
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
