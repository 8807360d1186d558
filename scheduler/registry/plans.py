"""What the registry holds that a job's options need, gathered for the pure core
(:mod:`scheduler.core.policies.henge.options`): the job as the next round would see it, the
model and error the last round kept of it, and its forecast with whether it is trusted."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from scheduler.config import Settings
from scheduler.core.decide import SchedulerState
from scheduler.core.policies.henge.options import JobOptions, job_options
from scheduler.core.policies.henge.product import HengeProductPolicy
from scheduler.core.policies.henge.product_state import ProductState
from scheduler.core.policies.registry import get_policy
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
    policy = get_policy(settings.policy, settings.policy_params)
    if not isinstance(policy, HengeProductPolicy):
        reason = f"options come from henge's job models; the scheduler runs {settings.policy!r}"
        return JobOptions(job.id, False, reason, None, None, view.executors)
    row = repo.load_state(session)
    state = SchedulerState.from_json(row.state) if row is not None else None
    kept = state.policy_state if state is not None else None
    models = kept.models if isinstance(kept, ProductState) else {}
    errors = kept.errors if isinstance(kept, ProductState) else {}
    return job_options(
        view,
        models.get(job.id),
        errors.get(job.id),
        policy.settings,
        now,
        forecast_trusted=stored is not None and stored.trusted,
    )
