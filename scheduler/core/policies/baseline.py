"""What the baseline policies of DESIGN §4 share.

Every baseline acts on each job alone, in a fixed order (registration time, then job id), and
hands out the cluster's free cores first come, first served: a job that grows uses up cores the
jobs after it in the same round can no longer get. Cores given back by a shrinking job are not
handed on within the round; they count as free once the cluster reports them free.

Per-job timers are kept as epoch seconds in small frozen records so that a policy's state
round-trips through JSON. A job that leaves the snapshot loses its timers, unless it is only
frozen for the round (``Snapshot.frozen_jobs``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

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
from scheduler.core.policy import JSONDict, PolicySettingsError

EPSILON = 1e-9


def epoch_s(moment: datetime) -> float:
    """``moment`` as seconds since the epoch (the form timers are stored in)."""
    return moment.timestamp()


def elapsed(now_s: float, since_s: float | None) -> float:
    """Seconds from ``since_s`` to ``now_s``; infinite when ``since_s`` never happened."""
    return math.inf if since_s is None else now_s - since_s


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


RecordT = TypeVar("RecordT")
ValueT = TypeVar("ValueT")


def keep_frozen(
    snapshot: Snapshot, previous: Mapping[str, ValueT], current: dict[str, ValueT]
) -> dict[str, ValueT]:
    """``current`` plus the previous entries of jobs frozen this round (stale reports): they
    are not in the snapshot, but their timers must survive until they report again. Entries of
    any other job missing from the snapshot (deregistered) are dropped."""
    for job_id in snapshot.frozen_jobs:
        if job_id in previous and job_id not in current:
            current[job_id] = previous[job_id]
    return current


def dump_records(records: Mapping[str, Any]) -> JSONDict:
    """Per-job timer records (frozen dataclasses) as plain JSON objects."""
    return {job_id: dataclasses.asdict(record) for job_id, record in sorted(records.items())}


def load_records(cls: type[RecordT], data: Any) -> dict[str, RecordT]:
    """The inverse of :func:`dump_records`; unknown keys in a record are ignored."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ValueError(f"policy state: expected an object of per-job records, got {data!r}")
    assert dataclasses.is_dataclass(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    records: dict[str, RecordT] = {}
    for job_id, record in data.items():
        if not isinstance(record, Mapping):
            raise ValueError(f"policy state: record of job {job_id!r} is not an object")
        records[str(job_id)] = cls(**{k: v for k, v in record.items() if k in known})
    return records


def optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def require(condition: bool, message: str) -> None:
    """Reject a settings value with :class:`PolicySettingsError`."""
    if not condition:
        raise PolicySettingsError(message)
