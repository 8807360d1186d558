"""The registry as one round sees it: a narrow port with a SQL implementation
(:mod:`scheduler.registry.sql_round_store`, production) and an in-memory one
(:mod:`scheduler.sim.memory_round_store`, the simulator), so both run the very same round code
in :mod:`scheduler.round.loop`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from scheduler.core.report import Report


@dataclass(frozen=True)
class JobRecord:
    """A registered job (admitted or queued) as stored."""

    job_id: str
    name: str
    tenant_id: str
    priority: float
    slo: Mapping[str, Any]
    status: str
    target_executors: int
    executors_initial: int
    executors_min: int
    executors_max: int
    executor_cores: int
    executor_memory_mb: int
    actuator: str
    created_at: datetime


@dataclass(frozen=True)
class ReportRecord:
    """One accepted report window and when it arrived."""

    received_at: datetime
    report: Report


@dataclass(frozen=True)
class RoundRecord:
    number: int
    started_at: datetime
    finished_at: datetime
    policy: str
    state: str
    action: str
    job_id: str | None
    reason: str
    total_utility: float
    max_utility: float


@dataclass(frozen=True)
class ActionRecord:
    kind: str
    job_id: str
    from_executors: int
    to_executors: int
    reason: str


@dataclass(frozen=True)
class AllocationRecord:
    job_id: str
    executors: int
    utility: float | None


class RoundTx(Protocol):
    """What one round reads and writes, inside one transaction."""

    def load_state(self) -> tuple[int, Mapping[str, Any] | None]:
        """The last round's number (0 before the first) and the stored scheduler state."""
        ...

    def jobs(self) -> Sequence[JobRecord]: ...

    def reports_since(
        self, job_ids: Sequence[str], since: datetime, span_s: float, newest: int
    ) -> Mapping[str, Sequence[ReportRecord]]:
        """Each job's reports received after ``since`` (the scheduler's clock: an agent's own
        clock may be off) whose windows end within ``span_s`` of the job's newest window end
        (its agent's clock), at most its ``newest`` ones, in the order of their windows."""
        ...

    def last_report_at(self, job_ids: Sequence[str]) -> Mapping[str, datetime]:
        """When each job last reported, for jobs with any report at all."""
        ...

    def set_status(self, job_id: str, status: str, reason: str, now: datetime) -> None: ...

    def set_target(self, job_id: str, executors: int, now: datetime) -> None: ...

    def request_replacement(self, job_id: str, executor_ids: Sequence[str], now: datetime) -> None:
        """Ask the job's agent to stop these executors (a new one starts for each)."""
        ...

    def record_round(
        self,
        record: RoundRecord,
        actions: Sequence[ActionRecord],
        allocations: Sequence[AllocationRecord],
        state: Mapping[str, Any],
    ) -> None: ...


class RoundStore(Protocol):
    def round(self) -> AbstractContextManager[RoundTx | None]:
        """A round's transaction; ``None`` when another process is running a round."""
        ...
