"""What the registry holds that the plans need, gathered for the pure core: a job's options
(:mod:`scheduler.core.policies.henge.options`), the cluster's capacity plan
(:mod:`scheduler.core.policies.henge.capacity_plan`) and a job's diagnosis
(:mod:`scheduler.core.policies.henge.remedies`). Each job is seen as the next round would
see it, with the model and error the last round kept of it and its forecast, and whether that
forecast is trusted."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.orm import Session

from scheduler.config import Settings
from scheduler.core.decide import SchedulerState
from scheduler.core.model import ClusterView
from scheduler.core.policies.henge.capacity_plan import CapacityPlan, capacity_plan, cores_without
from scheduler.core.policies.henge.model import JobModel
from scheduler.core.policies.henge.options import JobOptions, job_options
from scheduler.core.policies.henge.product import HengeProductPolicy
from scheduler.core.policies.henge.product_state import ProductState
from scheduler.core.policies.henge.remedies import JobDiagnosis, job_diagnosis
from scheduler.core.policies.registry import get_policy
from scheduler.realize.registry import replaces
from scheduler.registry import forecasts
from scheduler.registry import repository as repo
from scheduler.registry.sql_round_store import SqlRoundTx, job_record
from scheduler.registry.tables import Job
from scheduler.round.snapshot import job_views


def options_of(session: Session, job: Job, settings: Settings, now: datetime) -> JobOptions:
    """The options of ``job`` at ``now``, by the service's policy and its latest state."""
    stored = forecasts.stored_forecast(session, job.id)
    view = job_views(
        SqlRoundTx(session),
        [job_record(job)],
        now,
        settings.window_s,
        settings.sub_window_s,
        {job.id: stored.forecast} if stored is not None else None,
    )[0]
    policy = _henge(settings)
    if policy is None:
        return JobOptions(job.id, False, not_henge(settings), None, None, view.executors)
    models, errors = kept_models(session)
    return job_options(
        view,
        models.get(job.id),
        errors.get(job.id),
        policy.settings,
        now,
        forecast_trusted=stored is not None and stored.trusted,
    )


def diagnosis_of(session: Session, job: Job, settings: Settings, now: datetime) -> JobDiagnosis:
    """``job``'s diagnosis at ``now`` from its task figures, by the service's ``henge`` settings
    (the defaults under another policy), and what the scheduler does with it."""
    view = job_views(
        SqlRoundTx(session), [job_record(job)], now, settings.window_s, settings.sub_window_s
    )[0]
    policy = _henge(settings)
    henge = policy.settings if policy is not None else None
    return job_diagnosis(view, henge, settings.policy, replaces(settings.realizer))


class NotPlanned(Exception):
    """The plan cannot be made: the scheduler does not run ``henge``, or the what-if asks for
    more nodes than there are."""


def _henge(settings: Settings) -> HengeProductPolicy | None:
    """The service's policy when it is ``henge`` (whose job models the plans read)."""
    policy = get_policy(settings.policy, settings.policy_params)
    return policy if isinstance(policy, HengeProductPolicy) else None


def not_henge(settings: Settings) -> str:
    return f"plans come from henge's job models; the scheduler runs {settings.policy!r}"


def kept_models(session: Session) -> tuple[dict[str, JobModel], dict[str, float]]:
    """The job models and their recent errors as the last round kept them."""
    row = repo.load_state(session)
    state = SchedulerState.from_json(row.state) if row is not None else None
    kept = state.policy_state if state is not None else None
    if not isinstance(kept, ProductState):
        return {}, {}
    return dict(kept.models), dict(kept.errors)


def what_if_cores(
    cluster: ClusterView, without_nodes: int = 0, cores: float | None = None
) -> float:
    """The cores to plan with: ``cores`` when given, otherwise the ready nodes' without the
    ``without_nodes`` largest of them."""
    if cores is not None:
        return cores
    try:
        return cores_without(cluster, without_nodes)
    except ValueError as e:
        raise NotPlanned(str(e)) from e


def capacity_of(
    session: Session,
    jobs: Sequence[Job],
    settings: Settings,
    now: datetime,
    capacity_cores: float,
    horizon_s: float,
) -> CapacityPlan:
    """The capacity plan of the admitted ones of ``jobs`` at ``now`` against
    ``capacity_cores``."""
    policy = _henge(settings)
    if policy is None:
        raise NotPlanned(not_henge(settings))
    records = [job_record(j) for j in jobs if j.status == "admitted"]
    stored = forecasts.stored_forecasts(session, [r.job_id for r in records])
    views = job_views(
        SqlRoundTx(session),
        records,
        now,
        settings.window_s,
        settings.sub_window_s,
        {i: s.forecast for i, s in stored.items()},
    )
    models, errors = kept_models(session)
    return capacity_plan(
        views,
        models,
        errors,
        {i: s.trusted for i, s in stored.items()},
        policy.settings,
        now,
        capacity_cores,
        horizon_s,
    )
