"""The round store on the SQL registry (Postgres in production, SQLite for try-outs).

Each round is one transaction. On Postgres it first takes a transaction-scoped advisory lock,
so two ``henge serve`` processes never run a round at the same time, and the round number and
state are read under it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from scheduler.core.report import report_from_document
from scheduler.registry import repository as repo
from scheduler.registry.tables import Job
from scheduler.round.store import (
    ActionRecord,
    AllocationRecord,
    JobRecord,
    ReportRecord,
    RoundRecord,
)

# Key of the advisory lock that serialises rounds across replicas ("HENGE" in ASCII).
ROUND_LOCK_KEY = 0x48454E4745


class SqlRoundStore:
    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        self.session_factory = session_factory

    @contextmanager
    def round(self) -> Iterator[SqlRoundTx | None]:
        with self.session_factory() as session, session.begin():
            yield SqlRoundTx(session) if _take_round_lock(session) else None


def _take_round_lock(session: Session) -> bool:
    if session.get_bind().dialect.name != "postgresql":
        return True  # SQLite: one process owns the file; nothing to coordinate
    return bool(
        session.scalar(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": ROUND_LOCK_KEY})
    )


class SqlRoundTx:
    def __init__(self, session: Session) -> None:
        self.session = session
        self._rows: dict[str, Job] = {}

    def load_state(self) -> tuple[int, Mapping[str, Any] | None]:
        stored = repo.load_state(self.session)
        return (stored.last_round, stored.state) if stored else (0, None)

    def jobs(self) -> Sequence[JobRecord]:
        self._rows = {job.id: job for job in repo.active_jobs(self.session)}
        return [job_record(job) for job in self._rows.values()]

    def reports_since(
        self, job_ids: Sequence[str], since: datetime, span_s: float, newest: int
    ) -> Mapping[str, Sequence[ReportRecord]]:
        found: dict[str, list[ReportRecord]] = defaultdict(list)
        for row in repo.windows_since(self.session, job_ids, since, span_s, newest):
            report = report_from_document(row.report)
            found[row.job_id].append(ReportRecord(row.received_at, report))
        return found

    def last_report_at(self, job_ids: Sequence[str]) -> Mapping[str, datetime]:
        return {k: w.received_at for k, w in repo.latest_windows(self.session, job_ids).items()}

    def set_status(self, job_id: str, status: str, reason: str, now: datetime) -> None:
        job = self._rows[job_id]
        job.status, job.status_reason, job.updated_at = status, reason, now

    def set_target(self, job_id: str, executors: int, now: datetime) -> None:
        job = self._rows[job_id]
        job.target_executors, job.updated_at = executors, now

    def request_replacement(self, job_id: str, executor_ids: Sequence[str], now: datetime) -> None:
        job = self._rows[job_id]
        job.replace_executors, job.replace_requested_at = list(executor_ids), now

    def record_round(
        self,
        record: RoundRecord,
        actions: Sequence[ActionRecord],
        allocations: Sequence[AllocationRecord],
        state: Mapping[str, Any],
    ) -> None:
        repo.record_round(self.session, record, actions, allocations, dict(state))


def job_record(job: Job) -> JobRecord:
    """The registry's job as the round reads it."""
    return JobRecord(
        job_id=job.id,
        name=job.name,
        tenant_id=job.tenant_id,
        priority=job.priority,
        slo=job.slo,
        status=job.status,
        target_executors=job.target_executors,
        executors_initial=job.executors_initial,
        executors_min=job.executors_min,
        executors_max=job.executors_max,
        executor_cores=job.executor_cores,
        executor_memory_mb=job.executor_memory_mb,
        actuator=job.actuator,
        created_at=job.created_at,
    )
