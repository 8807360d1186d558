"""One scheduling round: snapshot → decide → realize → record, in one transaction.

The decision is the pure :func:`scheduler.core.decide.decide`; everything with effects is here.
On Postgres each round holds a transaction-scoped advisory lock, so two ``henge serve``
processes never run a round at the same time, and the round number and state are read under it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import structlog
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from scheduler.cluster.port import ClusterSource
from scheduler.core.decide import CoreSettings, SchedulerState, decide
from scheduler.core.model import JobStatus, Plan
from scheduler.metrics import ServiceMetrics
from scheduler.realize.port import Realizer
from scheduler.registry import repository as repo
from scheduler.snapshot import build_snapshot

log = structlog.get_logger("henge.loop")

# Key of the advisory lock that serialises rounds across replicas ("HENGE" in ASCII).
ROUND_LOCK_KEY = 0x48454E4745


@dataclass(frozen=True)
class LoopSettings:
    window_s: float = 60.0
    sub_window_s: float = 10.0


@dataclass(frozen=True)
class RoundOutcome:
    number: int
    plan: Plan


class SchedulerLoop:
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        cluster_source: ClusterSource,
        realizer: Realizer,
        core: CoreSettings,
        clock: Callable[[], datetime],
        *,
        settings: LoopSettings | None = None,
        metrics: ServiceMetrics | None = None,
        on_round: Callable[[int], None] | None = None,
    ) -> None:
        self.session_factory = session_factory
        self.cluster_source = cluster_source
        self.realizer = realizer
        self.core = core
        self.clock = clock
        self.settings = settings or LoopSettings()
        self.metrics = metrics
        self.on_round = on_round

    def run_round(self) -> RoundOutcome | None:
        """Run one round; None when another process holds the round lock."""
        started = time.perf_counter()
        with self.session_factory() as session, session.begin():
            if not _take_round_lock(session):
                log.debug("round.skipped", reason="another replica is running a round")
                return None
            outcome = self._round(session)
        if self.on_round is not None:
            self.on_round(outcome.number)
        if self.metrics is not None:
            self.metrics.rounds.labels(outcome.plan.state.value, outcome.plan.action.value).inc()
            self.metrics.round_seconds.observe(time.perf_counter() - started)
            self.metrics.total_utility.set(outcome.plan.total_utility)
            self.metrics.max_utility.set(outcome.plan.max_utility)
        return outcome

    def _round(self, session: Session) -> RoundOutcome:
        now = self.clock()
        stored = repo.load_state(session)
        number = (stored.last_round if stored else 0) + 1
        state = (
            SchedulerState.from_json(stored.state)
            if stored and stored.state
            else SchedulerState.initial(self.core)
        )
        snapshot, rows = build_snapshot(
            session,
            self.cluster_source,
            now,
            number,
            self.settings.window_s,
            self.settings.sub_window_s,
        )
        plan, new_state = decide(snapshot, state, self.core, now)

        for admission in plan.admissions:
            job = rows[admission.job_id]
            job.status, job.status_reason, job.updated_at = (
                admission.status.value,
                admission.reason,
                now,
            )
        for change in self.realizer.apply(plan.changes):
            job = rows[change.job_id]
            job.target_executors, job.updated_at = change.to_executors, now

        utilities = {v.job_id: (v.metrics.utility if v.metrics else None) for v in snapshot.jobs}
        repo.record_round(
            session,
            repo.RoundRecord(
                number=number,
                started_at=now,
                finished_at=self.clock(),
                policy=self.core.policy,
                state=plan.state.value,
                action=plan.action.value,
                job_id=plan.job_id,
                reason=plan.reason,
                total_utility=plan.total_utility,
                max_utility=plan.max_utility,
            ),
            actions=[
                (_kind(plan, c.job_id), c.job_id, c.from_executors, c.to_executors, c.reason)
                for c in plan.changes
            ],
            allocations=[
                (job_id, row.target_executors, utilities.get(job_id))
                for job_id, row in rows.items()
                if row.status == JobStatus.ADMITTED
            ],
            state=new_state.to_json(),
        )
        log.info(
            "round",
            round=number,
            state=plan.state.value,
            action=plan.action.value,
            job=plan.job_id,
            reason=plan.reason,
            total_utility=round(plan.total_utility, 3),
            max_utility=round(plan.max_utility, 3),
        )
        return RoundOutcome(number, plan)


def _kind(plan: Plan, job_id: str) -> str:
    """Admissions ride along with the round's action; their changes are recorded as ``admit``."""
    admitted = any(a.job_id == job_id and a.status is JobStatus.ADMITTED for a in plan.admissions)
    return "admit" if admitted else plan.action.value


def _take_round_lock(session: Session) -> bool:
    if session.get_bind().dialect.name != "postgresql":
        return True  # SQLite: one process owns the file; nothing to coordinate
    return bool(
        session.scalar(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": ROUND_LOCK_KEY})
    )
