"""``spark-dra``: Spark's dynamic resource allocation, applied per job (DESIGN §4).

Spark's ``ExecutorAllocationManager``, reduced to what a job's window metrics show:

- **Ramp up.** A job has pending tasks when it falls behind (juice below ``behind_juice``, a
  growing backlog, or batches longer than the trigger interval). Once tasks have been pending
  for ``scheduler_backlog_timeout_s``, the job asks for 1 more executor; while they stay
  pending it asks again every ``sustained_backlog_timeout_s`` (at most once a round) for 2,
  then 4, 8, … more. The step doubles only when the whole step was granted (as in Spark);
  otherwise, and whenever the backlog clears, it goes back to 1.
- **Idle removal.** With no tasks pending, executors beyond ``ceil(capacity × executors)``
  (the busy fraction of the job's cores, DESIGN §2) have been idle. Executors idle for
  ``executor_idle_timeout_s`` are removed; the count removed is the fewest seen idle over the
  whole timeout.
- Bounded by the job's min and max executors (Spark's ``minExecutors`` / ``maxExecutors``) and
  its useful parallelism (Spark never asks for more executors than its tasks can use).

A backlog or an idle spell first seen in a round is dated from the previous round, since the
window metrics that show it cover the time in between.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.core.model import JobView
from scheduler.core.policies.base import PerJobBaseline, Turn, require
from scheduler.core.policies.rounds import behind_reason, ceil_int
from scheduler.core.policies.timers import elapsed, per_job


@dataclass(frozen=True)
class SparkDRASettings:
    scheduler_backlog_timeout_s: float = 1.0
    """``spark.dynamicAllocation.schedulerBacklogTimeout``: how long tasks must be pending
    before the first request for more executors."""
    sustained_backlog_timeout_s: float = 1.0
    """``spark.dynamicAllocation.sustainedSchedulerBacklogTimeout``: the interval between
    further requests while tasks stay pending (at most one request per round)."""
    executor_idle_timeout_s: float = 60.0
    """``spark.dynamicAllocation.executorIdleTimeout``: an executor idle this long is removed."""
    behind_juice: float = 1.0
    """A job whose juice is below this has pending tasks."""

    def __post_init__(self) -> None:
        require(self.scheduler_backlog_timeout_s >= 0, "scheduler_backlog_timeout_s must be >= 0")
        require(self.sustained_backlog_timeout_s >= 0, "sustained_backlog_timeout_s must be >= 0")
        require(self.executor_idle_timeout_s >= 0, "executor_idle_timeout_s must be >= 0")
        require(0 < self.behind_juice <= 1, "behind_juice must be in (0, 1]")


@dataclass(frozen=True)
class DRATimers:
    """One job's allocation-manager timers (epoch seconds)."""

    backlog_since: float | None = None
    """When the current spell of pending tasks began."""
    last_request: float | None = None
    """When executors were last requested during this spell."""
    next_add: int = 1
    """How many executors the next request asks for."""
    idle_since: float | None = None
    """When the current idle spell began."""
    idle_executors: int = 0
    """The fewest executors seen idle since ``idle_since``."""


@dataclass(frozen=True)
class SparkDRAState:
    jobs: Mapping[str, DRATimers] = per_job(DRATimers)
    last_round: float | None = None
    """When the previous round ran (epoch seconds)."""


class SparkDRAPolicy(PerJobBaseline[SparkDRASettings, SparkDRAState, DRATimers]):
    """Spark dynamic allocation, one job at a time, free cores first come, first served."""

    name = "spark-dra"
    settings_type = SparkDRASettings
    state_type = SparkDRAState
    quiet_reason = "no job has pending tasks or idle executors"

    def timers(self, state: SparkDRAState) -> Mapping[str, DRATimers]:
        return state.jobs

    def previous_round(self, state: SparkDRAState) -> float | None:
        return state.last_round

    def next_state(self, timers: dict[str, DRATimers], turn: Turn) -> SparkDRAState:
        return SparkDRAState(timers, turn.now_s)

    def decide_job(self, job: JobView, previous: DRATimers | None, turn: Turn) -> DRATimers:
        timers = DRATimers() if previous is None else previous
        metrics = job.metrics
        if metrics is None:
            turn.log.note(job, "no metrics yet", unsettled=False)
            return timers
        pending = behind_reason(metrics, self.settings.behind_juice)
        if pending is not None:
            return self._ramp(job, timers, pending, turn)
        if metrics.capacity is None:
            return DRATimers()
        reported = (
            metrics.executors_reported if metrics.executors_reported is not None else job.executors
        )
        busy = max(0, ceil_int(metrics.capacity * reported))
        idle = min(job.executors - busy, job.executors - job.min_executors)
        if idle <= 0:
            return DRATimers()
        since = timers.idle_since if timers.idle_since is not None else turn.evidence_from
        fewest = min(idle, timers.idle_executors) if timers.idle_since is not None else idle
        idle_for = turn.now_s - since
        if idle_for < self.settings.executor_idle_timeout_s:
            turn.log.note(job, f"{fewest} executor(s) idle for {idle_for:.0f} s", unsettled=True)
            return DRATimers(idle_since=since, idle_executors=fewest)
        target = turn.free.grant(job, job.executors - fewest)
        if target != job.executors:
            turn.log.change(
                job,
                target,
                f"{job.executors - target} executor(s) idle for "
                f"{self.settings.executor_idle_timeout_s:g} s removed",
            )
        return DRATimers()

    def _ramp(self, job: JobView, timers: DRATimers, pending: str, turn: Turn) -> DRATimers:
        since = timers.backlog_since if timers.backlog_since is not None else turn.evidence_from
        if timers.last_request is None:
            due = turn.now_s - since >= self.settings.scheduler_backlog_timeout_s
        else:
            due = (
                elapsed(turn.now_s, timers.last_request)
                >= self.settings.sustained_backlog_timeout_s
            )
        if not due:
            turn.log.note(
                job, f"tasks pending ({pending}); waiting for the backlog timeout", unsettled=True
            )
            return DRATimers(
                backlog_since=since, last_request=timers.last_request, next_add=timers.next_add
            )
        step = max(1, timers.next_add)
        target = turn.free.grant(job, job.executors + step)
        added = target - job.executors
        if target != job.executors:
            turn.log.change(job, target, f"tasks pending ({pending}); asked for {step} more")
        else:
            turn.log.note(
                job,
                f"tasks pending ({pending}) but no executor can be added "
                "(at its bound or no free cores)",
                unsettled=True,
            )
        next_add = step * 2 if added == step else 1
        return DRATimers(backlog_since=since, last_request=turn.now_s, next_add=next_add)
