"""The round store in memory, for the simulator: the same port as the SQL registry, holding only
what rounds read (reports inside the window, the newest report time, the scheduler state)."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from scheduler.core.report import report_from_document
from scheduler.round.store import (
    ActionRecord,
    AllocationRecord,
    JobRecord,
    ReportRecord,
    RoundRecord,
)


@dataclasses.dataclass(frozen=True)
class _Round:
    record: RoundRecord
    actions: Sequence[ActionRecord]
    allocations: Sequence[AllocationRecord]


class MemoryRoundStore:
    def __init__(self, keep_s: float) -> None:
        """``keep_s``: how long reports are kept (at least the loop's window and one
        sub-window)."""
        self.keep = timedelta(seconds=keep_s)
        self.jobs: dict[str, JobRecord] = {}
        self.reports: dict[str, deque[ReportRecord]] = {}
        self.last_seen: dict[str, datetime] = {}
        self.last_round = 0
        self.state: Mapping[str, Any] | None = None
        self.last: _Round | None = None
        self.replacements: dict[str, tuple[tuple[str, ...], datetime]] = {}
        """Per job, the executors last asked to be replaced, and when."""

    def register(self, job: JobRecord) -> None:
        self.jobs[job.job_id] = job
        self.reports[job.job_id] = deque()

    def add_report(self, job_id: str, document: Mapping[str, Any], received_at: datetime) -> None:
        reports = self.reports[job_id]
        reports.append(ReportRecord(received_at, report_from_document(document)))
        self.last_seen[job_id] = received_at
        horizon = received_at - self.keep
        while reports and reports[0].report.window_end < horizon:
            reports.popleft()

    @contextmanager
    def round(self) -> Iterator[MemoryRoundTx]:
        yield MemoryRoundTx(self)


class MemoryRoundTx:
    def __init__(self, store: MemoryRoundStore) -> None:
        self.store = store

    def load_state(self) -> tuple[int, Mapping[str, Any] | None]:
        return self.store.last_round, self.store.state

    def jobs(self) -> Sequence[JobRecord]:
        return [j for j in self.store.jobs.values() if j.status != "removed"]

    def reports_since(
        self, job_ids: Sequence[str], since: datetime, span_s: float, newest: int
    ) -> Mapping[str, Sequence[ReportRecord]]:
        found: dict[str, list[ReportRecord]] = {}
        for job_id in job_ids:
            recent = sorted(
                (r for r in self.store.reports[job_id] if r.received_at > since),
                key=lambda r: r.report.window_end,
            )[-max(1, newest) :]
            if recent:
                first = recent[-1].report.window_end - timedelta(seconds=span_s)
                found[job_id] = [r for r in recent if r.report.window_end > first]
        return found

    def last_report_at(self, job_ids: Sequence[str]) -> Mapping[str, datetime]:
        seen = self.store.last_seen
        return {job_id: seen[job_id] for job_id in job_ids if job_id in seen}

    def set_status(self, job_id: str, status: str, reason: str, now: datetime) -> None:
        job = self.store.jobs[job_id]
        self.store.jobs[job_id] = dataclasses.replace(job, status=status)

    def set_target(self, job_id: str, executors: int, now: datetime) -> None:
        job = self.store.jobs[job_id]
        self.store.jobs[job_id] = dataclasses.replace(job, target_executors=executors)

    def request_replacement(self, job_id: str, executor_ids: Sequence[str], now: datetime) -> None:
        self.store.replacements[job_id] = (tuple(executor_ids), now)

    def record_round(
        self,
        record: RoundRecord,
        actions: Sequence[ActionRecord],
        allocations: Sequence[AllocationRecord],
        state: Mapping[str, Any],
    ) -> None:
        self.store.last_round = record.number
        self.store.state = state
        self.store.last = _Round(record, actions, allocations)
