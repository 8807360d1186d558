"""The registry's schema. Changed only through Alembic revisions in ``migrations/``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from scheduler.registry.types import JSONDoc, UTCDateTime

# Stable constraint names so that migrations and autogenerate agree on every backend.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only gets an auto-incrementing key from INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Tenant(Base):
    __tablename__ = "tenants"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class DashboardSession(Base):
    """A dashboard sign-in: the digest of the id its cookie carries, whose it is, and a mark of
    the token it was opened with (a session whose token no longer holds is over; see
    :mod:`scheduler.web.sessions`)."""

    __tablename__ = "dashboard_sessions"

    id_digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    tenant_id: Mapped[str | None] = mapped_column(
        ForeignKey("tenants.id", ondelete="CASCADE"), index=True, nullable=True
    )
    token_mark: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        # A name is taken only while the job is registered; a removed job frees it.
        Index(
            "uq_jobs_tenant_name_active",
            "tenant_id",
            "name",
            unique=True,
            postgresql_where=text("status <> 'removed'"),
            sqlite_where=text("status <> 'removed'"),
        ),
        Index("ix_jobs_status", "status"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    priority: Mapped[float] = mapped_column(Float)
    slo: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    executors_initial: Mapped[int] = mapped_column(Integer)
    executors_min: Mapped[int] = mapped_column(Integer)
    executors_max: Mapped[int] = mapped_column(Integer)
    executor_cores: Mapped[int] = mapped_column(Integer)
    executor_memory_mb: Mapped[int] = mapped_column(Integer)
    actuator: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))
    status_reason: Mapped[str] = mapped_column(Text, default="")
    agent_token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    target_executors: Mapped[int] = mapped_column(Integer)
    replace_executors: Mapped[list[str] | None] = mapped_column(JSONDoc, nullable=True)
    """Executors the last replacement asked the job's agent to stop (a new one starts for
    each); answered to its reports for a window's time after ``replace_requested_at``."""
    replace_requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    removed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class MetricWindow(Base):
    """One accepted agent report, with the values derived from it at ingestion."""

    __tablename__ = "metric_windows"
    __table_args__ = (
        UniqueConstraint("job_id", "window_start", "window_end"),
        Index("ix_metric_windows_job_end", "job_id", "window_end"),
        Index("ix_metric_windows_window_end", "window_end"),
        # A round reads each job's recent windows by when they arrived (agents' clocks may be off).
        Index("ix_metric_windows_job_received", "job_id", "received_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    window_start: Mapped[datetime] = mapped_column(UTCDateTime)
    window_end: Mapped[datetime] = mapped_column(UTCDateTime)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime)
    executors: Mapped[int] = mapped_column(Integer)
    report: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    # Derived at ingestion (null when the report lacks what the value needs).
    utility: Mapped[float | None] = mapped_column(Float, nullable=True)
    juice: Mapped[float | None] = mapped_column(Float, nullable=True)
    juice_raw: Mapped[float | None] = mapped_column(Float, nullable=True)
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    capacity: Mapped[float | None] = mapped_column(Float, nullable=True)
    input_rate: Mapped[float | None] = mapped_column(Float, nullable=True)
    processed_rate: Mapped[float | None] = mapped_column(Float, nullable=True)


class InputHour(Base):
    """One job's input over one hour, minute by minute, rolled up from its report windows
    (:mod:`scheduler.registry.history`) and kept for ``history_days``, long after the windows
    themselves: what a forecast of the job's input is fitted on. ``minutes`` packs, for each of
    the hour's 60 minutes, the rows arrived, the rows processed and the seconds of report
    windows behind them (:func:`scheduler.registry.history.pack`): a row an hour pays the key
    and the row's overhead once for 60 minutes."""

    __tablename__ = "input_hours"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    hour: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    """The hour's start, on the clock of the job's agent (window ends)."""
    minutes: Mapped[bytes] = mapped_column(LargeBinary)


class InputForecastRow(Base):
    """One job's latest input forecast (:mod:`scheduler.registry.forecasts`): fitted from its
    :class:`InputHour` minutes outside the rounds and read by every round. ``mean``, ``upper``
    and ``naive`` pack one 32-bit float per step from ``start``."""

    __tablename__ = "input_forecasts"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    fitted_at: Mapped[datetime] = mapped_column(UTCDateTime)
    start: Mapped[datetime] = mapped_column(UTCDateTime)
    """The moment the first step is for (a minute's start, on the clock of the job's agent)."""
    step_s: Mapped[float] = mapped_column(Float)
    mean: Mapped[bytes] = mapped_column(LargeBinary)
    upper: Mapped[bytes] = mapped_column(LargeBinary)
    naive: Mapped[bytes] = mapped_column(LargeBinary)
    error: Mapped[float | None] = mapped_column(Float, nullable=True)
    """The fitter's backtest error against the seasonal-naive forecast's (below 1: better)."""
    method: Mapped[str] = mapped_column(String(32))


class RegistryMark(Base):
    """A named point in time the registry's background work has reached, e.g. the receipt time
    up to which report windows are rolled up into :class:`InputMinute`."""

    __tablename__ = "registry_marks"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime)


class Round(Base):
    __tablename__ = "rounds"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    number: Mapped[int] = mapped_column(BigInteger, unique=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    finished_at: Mapped[datetime] = mapped_column(UTCDateTime)
    policy: Mapped[str] = mapped_column(String(32))
    state: Mapped[str] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(16))
    job_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    reason: Mapped[str] = mapped_column(Text)
    total_utility: Mapped[float] = mapped_column(Float)
    max_utility: Mapped[float] = mapped_column(Float)


class Action(Base):
    """One allocation change a round applied (a revert changes several jobs)."""

    __tablename__ = "actions"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    from_executors: Mapped[int] = mapped_column(Integer)
    to_executors: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str] = mapped_column(Text)


class Allocation(Base):
    """Every job's executors and utility as a round saw them."""

    __tablename__ = "allocations"

    round_id: Mapped[int] = mapped_column(
        ForeignKey("rounds.id", ondelete="CASCADE"), primary_key=True
    )
    job_id: Mapped[str] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    executors: Mapped[int] = mapped_column(Integer)
    utility: Mapped[float | None] = mapped_column(Float, nullable=True)


class StoredSchedulerState(Base):
    """The state machine's memory (history, blacklist, reduction marks): one row."""

    __tablename__ = "scheduler_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    state: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    last_round: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
