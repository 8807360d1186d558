"""One scheduling round: snapshot → decide → realize → record, in one transaction.

The decision is the pure :func:`scheduler.core.decide.decide`; everything with effects goes
through ports: the round store (registry), the cluster view and the realizer. ``henge serve``
and the simulator run this same code with different ports and clocks.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import structlog

from scheduler.cluster.port import ClusterSource
from scheduler.core.decide import CoreSettings, SchedulerState
from scheduler.core.model import JobStatus, Plan, Replacement, Snapshot
from scheduler.prometheus import ServiceMetrics
from scheduler.realize.port import Realizer, Replacer
from scheduler.round.deciding import decide_paused
from scheduler.round.forecasts import ForecastSource
from scheduler.round.snapshot import build_snapshot
from scheduler.round.store import (
    ActionRecord,
    AllocationRecord,
    RoundRecord,
    RoundStore,
    RoundTx,
)

log = structlog.get_logger("henge.loop")


@dataclass(frozen=True)
class LoopSettings:
    window_s: float = 60.0
    sub_window_s: float = 10.0
    metrics_max_jobs: int = 100
    failpoint: str | None = None
    """For fault tests: the step of a round at which the process kills itself (see
    ``Settings.failpoint``)."""


@dataclass(frozen=True)
class RoundOutcome:
    number: int
    plan: Plan
    snapshot: Snapshot
    replaced: tuple[Replacement, ...] = ()
    """The plan's replacements that took effect."""


class SchedulerLoop:
    def __init__(
        self,
        store: RoundStore,
        cluster_source: ClusterSource,
        realizer: Realizer,
        core: CoreSettings,
        clock: Callable[[], datetime],
        *,
        settings: LoopSettings | None = None,
        metrics: ServiceMetrics | None = None,
        on_round: Callable[[int], None] | None = None,
        forecasts: ForecastSource | None = None,
    ) -> None:
        self.store = store
        self.cluster_source = cluster_source
        self.realizer = realizer
        self.core = core
        self.clock = clock
        self.settings = settings or LoopSettings()
        self.metrics = metrics
        self.on_round = on_round
        self.forecasts = forecasts

    def run_round(self) -> RoundOutcome | None:
        """Run one round; None when another process holds the round lock."""
        started = time.perf_counter()
        with self.store.round() as tx:
            if tx is None:
                log.debug("round.skipped", reason="another replica is running a round")
                return None
            outcome = self._round(tx)
        if self.on_round is not None:
            self.on_round(outcome.number)
        if self.metrics is not None:
            self.metrics.rounds.labels(outcome.plan.state.value, outcome.plan.action.value).inc()
            self.metrics.round_seconds.observe(time.perf_counter() - started)
            self.metrics.total_utility.set(outcome.plan.total_utility)
            self.metrics.max_utility.set(outcome.plan.max_utility)
            self.metrics.record_jobs(
                [(v.job_id, v.name, v.priority, v.utility) for v in outcome.snapshot.jobs],
                self.settings.metrics_max_jobs,
            )
        return outcome

    def _round(self, tx: RoundTx) -> RoundOutcome:
        now = self.clock()
        last, stored = tx.load_state()
        number = last + 1
        state = SchedulerState.from_json(stored) if stored else SchedulerState.initial(self.core)
        jobs = tx.jobs()
        forecasts = self.forecasts.latest([j.job_id for j in jobs], now) if self.forecasts else None
        snapshot = build_snapshot(
            tx, self.cluster_source, jobs, now, number,
            self.settings.window_s, self.settings.sub_window_s, forecasts,
            can_replace=isinstance(self.realizer, Replacer),
        )  # fmt: skip
        plan, new_state = decide_paused(snapshot, state, self.core, now)
        self._failpoint("round.decided", plan)

        statuses = {j.job_id: j.status for j in jobs}
        targets = {j.job_id: j.target_executors for j in jobs}
        for admission in plan.admissions:
            tx.set_status(admission.job_id, admission.status.value, admission.reason, now)
            statuses[admission.job_id] = admission.status.value
        for change in self.realizer.apply(plan.changes):
            tx.set_target(change.job_id, change.to_executors, now)
            targets[change.job_id] = change.to_executors
        replaced = self._replace(plan)
        for r in replaced:
            tx.request_replacement(r.job_id, r.executor_ids, now)
        self._failpoint("round.published", plan)

        tx.record_round(
            RoundRecord(
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
                ActionRecord(
                    action_kind(plan, c.job_id),
                    c.job_id,
                    c.from_executors,
                    c.to_executors,
                    c.reason,
                )
                for c in plan.changes
            ]
            + [
                ActionRecord(
                    plan.action.value,
                    r.job_id,
                    targets[r.job_id],
                    targets[r.job_id],
                    f"executor(s) {', '.join(r.executor_ids)} replaced: {r.reason}",
                )
                for r in replaced
            ],
            allocations=_allocations(snapshot, statuses, targets),
            state=new_state.to_json(),
        )
        self._failpoint("round.recorded", plan)  # written, not yet committed
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
        return RoundOutcome(number, plan, snapshot, tuple(replaced))

    def _replace(self, plan: Plan) -> list[Replacement]:
        """The plan's replacements that took effect (a policy plans none where the snapshot says
        the realizer cannot replace executors)."""
        if not plan.replacements or not isinstance(self.realizer, Replacer):
            return []
        return list(self.realizer.replace(plan.replacements))

    def _failpoint(self, step: str, plan: Plan) -> None:
        """Die here when told to, in a round that changes something (one that does not has
        nothing to lose or to apply twice)."""
        if self.settings.failpoint == step and (plan.changes or plan.admissions):
            log.warning("failpoint", step=step)
            os.kill(os.getpid(), signal.SIGKILL)


def _allocations(
    snapshot: Snapshot, statuses: dict[str, str], targets: dict[str, int]
) -> list[AllocationRecord]:
    utilities = {v.job_id: v.metrics.utility if v.metrics else None for v in snapshot.jobs}
    return [
        AllocationRecord(job_id, targets[job_id], utilities.get(job_id))
        for job_id, status in statuses.items()
        if status == JobStatus.ADMITTED
    ]


def action_kind(plan: Plan, job_id: str) -> str:
    """Admissions ride along with the round's action; their changes are recorded as ``admit``."""
    admitted = any(a.job_id == job_id and a.status is JobStatus.ADMITTED for a in plan.admissions)
    return "admit" if admitted else plan.action.value
