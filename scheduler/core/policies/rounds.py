"""How a round of a baseline policy (DESIGN §4) goes.

Every baseline acts on each job alone, in a fixed order (registration time, then job id), and
hands out the cluster's free cores first come, first served: a job that grows uses up cores the
jobs after it in the same round can no longer get. Cores given back by a shrinking job are not
handed on within the round; they count as free once the cluster reports them free.
"""

from __future__ import annotations

import math

from scheduler.core.bounds import clamp_target, executors_that_fit
from scheduler.core.model import (
    ActionKind,
    Change,
    ClusterState,
    JobMetrics,
    JobStatus,
    JobView,
    Plan,
    Snapshot,
)

EPSILON = 1e-9


def ceil_int(value: float) -> int:
    """``ceil`` that ignores float noise just above an integer (4.000000001 → 4)."""
    return math.ceil(value - EPSILON)


def jobs_in_order(snapshot: Snapshot) -> list[JobView]:
    """The admitted jobs, first registered first (ties broken by job id)."""
    admitted = (job for job in snapshot.jobs if job.status is JobStatus.ADMITTED)
    return sorted(admitted, key=lambda job: (job.registered_at, job.job_id))


def behind_reason(metrics: JobMetrics, behind_juice: float) -> str | None:
    """Why the job counts as falling behind (tasks pending), or ``None`` when it keeps up.

    Behind means: juice below ``behind_juice``, or a backlog that grows (rows waiting while
    input arrives faster than the job processes it), or batches that take longer than the
    interval between batch starts.
    """
    if metrics.juice is not None and metrics.juice < behind_juice:
        return f"juice {metrics.juice:.3f} < {behind_juice:g}"
    if (
        metrics.backlog_rows is not None
        and metrics.backlog_rows > 0
        and metrics.input_rate is not None
        and metrics.processed_rate is not None
        and metrics.input_rate > metrics.processed_rate
    ):
        return f"backlog of {metrics.backlog_rows:.0f} rows growing"
    if (
        metrics.mean_batch_s is not None
        and metrics.trigger_interval_s is not None
        and metrics.mean_batch_s > metrics.trigger_interval_s
    ):
        return (
            f"batches of {metrics.mean_batch_s:.1f} s exceed the "
            f"{metrics.trigger_interval_s:.1f} s trigger interval"
        )
    return None


class FreeCores:
    """The free cores of one round, handed out first come, first served."""

    def __init__(self, cores: float) -> None:
        self.cores = max(0.0, cores)

    def fits(self, job: JobView, more_executors: int) -> bool:
        """Whether ``more_executors`` of ``job``'s executors fit in what is left."""
        return more_executors <= executors_that_fit(job, self.cores)

    def grant(self, job: JobView, wanted: int) -> int:
        """``wanted`` kept inside the job's bounds and what is left; takes the cores it uses."""
        target = clamp_target(job, wanted, self.cores)
        grown = target - job.executors
        if grown > 0:
            self.cores = max(0.0, self.cores - grown * job.cores_per_executor)
        return target


class RoundLog:
    """Collects one round's changes and remarks and turns them into the round's :class:`Plan`."""

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self.notes: list[str] = []
        self.unsettled = False

    def change(self, job: JobView, target: int, reason: str) -> None:
        self.changes.append(Change(job.job_id, job.executors, target, reason))
        self.unsettled = True

    def note(self, job: JobView, text: str, *, unsettled: bool) -> None:
        """A remark on a job left unchanged; ``unsettled`` when the policy still wants to act."""
        self.notes.append(f"{job.name}: {text}")
        self.unsettled = self.unsettled or unsettled

    def plan(self, snapshot: Snapshot, quiet_reason: str) -> Plan:
        """``reconfigure`` with every change, or ``none`` with the remarks (or ``quiet_reason``)."""
        jobs = jobs_in_order(snapshot)
        total = sum(job.utility for job in jobs)
        maximum = sum(job.priority for job in jobs)
        if self.changes:
            names = {job.job_id: job.name for job in jobs}
            reason = "; ".join(
                f"{names.get(c.job_id, c.job_id)}: {c.from_executors}→{c.to_executors} ({c.reason})"
                for c in self.changes
            )
            return Plan(
                ActionKind.RECONFIGURE,
                reason,
                ClusterState.NOT_CONVERGED,
                job_id=self.changes[0].job_id if len(self.changes) == 1 else None,
                changes=tuple(self.changes),
                total_utility=total,
                max_utility=maximum,
            )
        state = ClusterState.NOT_CONVERGED if self.unsettled else ClusterState.CONVERGED
        reason = "; ".join(self.notes) if self.notes else quiet_reason
        return Plan.no_change(reason, state, total, maximum)
