"""Registry reads and writes. Routes and the loop go through here, never through raw tables."""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Engine, delete, func, select, text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from scheduler.registry.tables import (
    Action,
    Allocation,
    Job,
    MetricWindow,
    Round,
    StoredSchedulerState,
    Tenant,
)
from scheduler.registry.types import UTCDateTime
from scheduler.round.store import ActionRecord, AllocationRecord, RoundRecord


class RegistryError(Exception):
    """Base of the registry's refusals; ``field`` names the input at fault, when there is one."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class NotFoundError(RegistryError):
    pass


class ConflictError(RegistryError):
    pass


def new_id() -> str:
    return str(uuid.uuid4())


# ---- tenants ---------------------------------------------------------------------------------


def create_tenant(session: Session, name: str, token_hash: str, now: datetime) -> Tenant:
    if session.scalar(select(Tenant.id).where(Tenant.name == name)) is not None:
        raise ConflictError(f"a tenant named {name!r} exists already", field="name")
    tenant = Tenant(id=new_id(), name=name, token_hash=token_hash, created_at=now)
    session.add(tenant)
    session.flush()
    return tenant


def list_tenants(session: Session) -> Sequence[Tenant]:
    return session.scalars(select(Tenant).order_by(Tenant.created_at, Tenant.name)).all()


# ---- jobs ------------------------------------------------------------------------------------


def add_job(session: Session, job: Job) -> Job:
    clash = session.scalar(
        select(Job.id).where(
            Job.tenant_id == job.tenant_id, Job.name == job.name, Job.status != "removed"
        )
    )
    if clash is not None:
        raise ConflictError(f"this tenant already has a job named {job.name!r}", field="name")
    session.add(job)
    try:
        session.flush()
    except IntegrityError as exc:  # a concurrent registration of the same name
        raise ConflictError(f"this tenant already has a job named {job.name!r}", "name") from exc
    return job


def visible_job(session: Session, job_id: str, tenant_id: str | None) -> Job:
    """The job, if the caller may see it (``tenant_id`` None: the admin). 404 otherwise."""
    job = session.get(Job, job_id)
    if (
        job is None
        or job.status == "removed"
        or (tenant_id is not None and job.tenant_id != tenant_id)
    ):
        raise NotFoundError("no such job")
    return job


def list_jobs(session: Session, tenant_id: str | None) -> Sequence[Job]:
    query = select(Job).where(Job.status != "removed").order_by(Job.created_at, Job.id)
    if tenant_id is not None:
        query = query.where(Job.tenant_id == tenant_id)
    return session.scalars(query).all()


def active_jobs(session: Session) -> Sequence[Job]:
    return list_jobs(session, None)


def latest_windows(session: Session, job_ids: Sequence[str]) -> dict[str, MetricWindow]:
    """The newest metric window of each job."""
    if not job_ids:
        return {}
    newest = (
        select(MetricWindow.job_id, func.max(MetricWindow.window_end).label("end"))
        .where(MetricWindow.job_id.in_(job_ids))
        .group_by(MetricWindow.job_id)
        .subquery()
    )
    rows = session.scalars(
        select(MetricWindow).join(
            newest,
            (MetricWindow.job_id == newest.c.job_id) & (MetricWindow.window_end == newest.c.end),
        )
    ).all()
    return {row.job_id: row for row in rows}


# ---- reports ---------------------------------------------------------------------------------


WindowKey = tuple[datetime, datetime]
"""A window's (start, end): with the job, what makes it the same window."""


@dataclasses.dataclass(frozen=True)
class AgentJob:
    """What a report request needs of its job: who it is, how it is judged, its target, and
    its newest window (``None`` before its first)."""

    id: str
    status: str
    slo: dict[str, Any]
    priority: float
    target_executors: int
    newest: WindowKey | None
    newest_report: dict[str, Any] | None
    replace_executors: list[str] | None = None
    replace_requested_at: datetime | None = None


def agent_job(session: Session, token_hash: str) -> AgentJob | None:
    """The job whose agent token hashes to ``token_hash``, with its newest window, in one
    query: what every report request needs first. (Columns, not ORM objects: this runs for
    every request.)"""
    newest = (
        select(MetricWindow.id)
        .where(MetricWindow.job_id == Job.id)
        .order_by(MetricWindow.window_end.desc())
        .limit(1)
        .correlate(Job)
        .scalar_subquery()
    )
    found = session.execute(
        select(
            Job.id,
            Job.status,
            Job.slo,
            Job.priority,
            Job.target_executors,
            Job.replace_executors,
            Job.replace_requested_at,
            MetricWindow.window_start,
            MetricWindow.window_end,
            MetricWindow.report,
        )
        .outerjoin(MetricWindow, MetricWindow.id == newest)
        .where(Job.agent_token_hash == token_hash)
    ).first()
    if found is None:
        return None
    job_id, status, slo, priority, target, replace, asked, start, end, report = found
    key = (start, end) if start is not None else None
    return AgentJob(job_id, status, slo, priority, target, key, report, replace, asked)


def window_stored(session: Session, job_id: str, start: datetime, end: datetime) -> bool:
    """Whether the job has this exact window stored."""
    found = session.scalar(
        select(MetricWindow.id).where(
            MetricWindow.job_id == job_id,
            MetricWindow.window_start == start,
            MetricWindow.window_end == end,
        )
    )
    return found is not None


def insert_windows(session: Session, rows: Sequence[dict[str, Any]]) -> set[WindowKey]:
    """Store windows (``metric_windows`` columns, one job's, in order) in one statement, and
    return the keys of those stored. A window stored meanwhile by another request for the same
    job (an agent's retry racing its first try) is skipped, not an error."""
    if not rows:
        return set()
    postgres = session.get_bind().dialect.name == "postgresql"
    document = _rows_document(rows) if postgres else None
    if document is not None:
        inserted = session.execute(_POSTGRES_WINDOW_INSERT, {"rows": document})
    else:
        table = MetricWindow.__table__
        statement = (
            postgresql_insert(table) if postgres else sqlite_insert(table)
        ).on_conflict_do_nothing(index_elements=["job_id", "window_start", "window_end"])
        inserted = session.execute(
            statement.returning(table.c.window_start, table.c.window_end), list(rows)
        )
    return {(start, end) for start, end in inserted}


_WINDOW_COLUMNS = ", ".join(c.name for c in MetricWindow.__table__.columns if c.name != "id")
_POSTGRES_WINDOW_INSERT = text(
    f"INSERT INTO metric_windows ({_WINDOW_COLUMNS}) SELECT {_WINDOW_COLUMNS} "
    "FROM jsonb_populate_recordset(NULL::metric_windows, CAST(:rows AS jsonb)) "
    "ON CONFLICT (job_id, window_start, window_end) DO NOTHING "
    "RETURNING window_start, window_end"
).columns(window_start=UTCDateTime(), window_end=UTCDateTime())
"""Windows inserted from one JSON array: the statement's text does not depend on how many
windows a request carries, so the driver parses it once and Postgres prepares it, where a
multi-row ``VALUES`` list is new text, parsed anew, for every count."""


def _rows_document(rows: Sequence[dict[str, Any]]) -> str | None:
    """``rows`` as one JSON array, or ``None`` when a column's value has no exact JSON form (a
    float that is not finite, a datetime without a zone): those take the row-by-row statement.
    A ``report`` document must hold only JSON's own values, as the API's validation leaves it
    (it refuses NaN and infinity)."""
    for row in rows:
        for value in row.values():
            if isinstance(value, float) and not math.isfinite(value):
                return None
            if isinstance(value, datetime) and value.tzinfo is None:
                return None
    return orjson.dumps(list(rows)).decode()


def windows_since(
    session: Session, job_ids: Sequence[str], since: datetime, span_s: float, newest: int
) -> list[MetricWindow]:
    """The jobs' windows received after ``since`` that end within ``span_s`` of the job's newest
    window end, at most each job's ``newest``, each job's in the order of its windows. Only the
    windows kept are loaded whole (their reports are most of a round's reading)."""
    if not job_ids:
        return []
    ranked = (
        select(
            MetricWindow.id,
            MetricWindow.job_id,
            MetricWindow.window_end,
            func.row_number()
            .over(partition_by=MetricWindow.job_id, order_by=MetricWindow.window_end.desc())
            .label("rank"),
        )
        .where(MetricWindow.job_id.in_(job_ids), MetricWindow.received_at > since)
        .subquery()
    )
    candidates = session.execute(
        select(ranked.c.id, ranked.c.job_id, ranked.c.window_end)
        .where(ranked.c.rank <= newest)
        .order_by(ranked.c.job_id, ranked.c.window_end.desc())
    ).all()
    keep: list[int] = []
    first: dict[str, datetime] = {}
    for window_id, job_id, end in candidates:
        if job_id not in first:  # its newest window
            first[job_id] = end - timedelta(seconds=span_s)
        if end > first[job_id]:
            keep.append(window_id)
    if not keep:
        return []
    return list(
        session.scalars(
            select(MetricWindow)
            .where(MetricWindow.id.in_(keep))
            .order_by(MetricWindow.job_id, MetricWindow.window_end)
        )
    )


def history(
    session: Session, job_id: str, since: datetime | None, until: datetime | None, limit: int
) -> Sequence[MetricWindow]:
    """The job's windows ending in (since, until], oldest first, the newest ``limit`` of them."""
    query = select(MetricWindow).where(MetricWindow.job_id == job_id)
    if since is not None:
        query = query.where(MetricWindow.window_end > since)
    if until is not None:
        query = query.where(MetricWindow.window_end <= until)
    rows = session.scalars(query.order_by(MetricWindow.window_end.desc()).limit(limit)).all()
    return list(reversed(rows))


def purge_windows(session: Session, older_than: datetime) -> int:
    """Delete metric windows that ended before ``older_than``; returns how many."""
    result = session.execute(delete(MetricWindow).where(MetricWindow.window_end < older_than))
    return int(getattr(result, "rowcount", 0) or 0)


def purge_rounds(session: Session, older_than: datetime) -> int:
    """Delete rounds that started before ``older_than`` (their actions and allocations go with
    them); returns how many. The round counter lives in the scheduler's state, not here."""
    result = session.execute(delete(Round).where(Round.started_at < older_than))
    return int(getattr(result, "rowcount", 0) or 0)


PURGED_TABLES = ("metric_windows", "rounds", "actions", "allocations", "scheduler_state", "jobs")
"""The tables the purge empties, and those every round rewrites (the state, the jobs' targets)."""


def reclaim_purged_space(engine: Engine) -> None:
    """Let Postgres reuse the space of purged and rewritten rows now (``VACUUM``, which neither
    blocks reads nor writes) rather than whenever autovacuum comes by, if it is on at all; a
    no-op elsewhere (SQLite's ``VACUUM`` would rewrite the whole file)."""
    if engine.dialect.name != "postgresql":
        return
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text(f"VACUUM (ANALYZE) {', '.join(PURGED_TABLES)}"))


def retention_cutoff(now: datetime, days: float) -> datetime:
    return now - timedelta(days=days)


# ---- rounds ----------------------------------------------------------------------------------


def list_rounds(
    session: Session, since: datetime | None, until: datetime | None, limit: int
) -> list[tuple[RoundRecord, list[ActionRecord]]]:
    """Rounds newest first, each with its actions (read as plain rows: thousands at once)."""
    rounds_t, actions_t = Round.__table__, Action.__table__
    query = select(*(rounds_t.c[name] for name in _ROUND_FIELDS), rounds_t.c.id)
    if since is not None:
        query = query.where(rounds_t.c.started_at >= since)
    if until is not None:
        query = query.where(rounds_t.c.started_at <= until)
    rounds = session.execute(query.order_by(rounds_t.c.number.desc()).limit(limit)).all()
    by_round: dict[int, list[ActionRecord]] = {r.id: [] for r in rounds}
    if rounds:
        # The same rounds by their number range, not by a list of thousands of ids.
        for action in session.execute(
            select(actions_t.c.round_id, *(actions_t.c[name] for name in _ACTION_FIELDS))
            .join(rounds_t, rounds_t.c.id == actions_t.c.round_id)
            .where(rounds_t.c.number.between(rounds[-1].number, rounds[0].number))
            .order_by(actions_t.c.id)
        ):
            if action.round_id in by_round:
                by_round[action.round_id].append(ActionRecord(*action[1:]))
    return [(RoundRecord(*r[:-1]), by_round[r.id]) for r in rounds]


_ROUND_FIELDS = tuple(f.name for f in dataclasses.fields(RoundRecord))
_ACTION_FIELDS = tuple(f.name for f in dataclasses.fields(ActionRecord))


def job_actions(
    session: Session, job_id: str, since: datetime | None, until: datetime | None, limit: int
) -> list[tuple[int, datetime, Action]]:
    """The actions on one job with their round's number and start, newest round first."""
    query = (
        select(Round.number, Round.started_at, Action)
        .join(Action, Action.round_id == Round.id)
        .where(Action.job_id == job_id)
    )
    if since is not None:
        query = query.where(Round.started_at >= since)
    if until is not None:
        query = query.where(Round.started_at <= until)
    rows = session.execute(query.order_by(Round.number.desc(), Action.id).limit(limit)).all()
    return [(number, started_at, action) for number, started_at, action in rows]


def latest_round(session: Session) -> Round | None:
    return session.scalar(select(Round).order_by(Round.number.desc()).limit(1))


def load_state(session: Session) -> StoredSchedulerState | None:
    return session.get(StoredSchedulerState, 1)


def current_round_number(session: Session) -> int:
    state = load_state(session)
    return state.last_round if state is not None else 0


def job_counts(session: Session) -> dict[str, Any]:
    rows = session.execute(select(Job.status, func.count()).group_by(Job.status)).all()
    return {str(status): int(count) for status, count in rows}


# ---- round records ---------------------------------------------------------------------------


def record_round(
    session: Session,
    record: RoundRecord,
    actions: Sequence[ActionRecord],
    allocations: Sequence[AllocationRecord],
    state: dict[str, Any],
) -> Round:
    """Write a round, its actions, every job's allocation and the scheduler's new state. The
    caller commits them as one."""
    row = Round(**record.__dict__)
    session.add(row)
    session.flush()
    session.add_all(Action(round_id=row.id, **a.__dict__) for a in actions)
    session.add_all(Allocation(round_id=row.id, **a.__dict__) for a in allocations)
    stored = session.get(StoredSchedulerState, 1)
    if stored is None:
        session.add(
            StoredSchedulerState(
                id=1, state=state, last_round=record.number, updated_at=record.finished_at
            )
        )
    else:
        stored.state = state
        stored.last_round = record.number
        stored.updated_at = record.finished_at
    session.flush()
    return row
