"""The last word on every plan: each change pulled inside the job's bounds and the free cores.

Whatever a policy asks for, a change

- targets a job the round counted (changes to frozen, queued or unknown jobs are dropped),
- stays within [min, upper bound] (max executors and useful parallelism, :mod:`bounds`),
- grows only into room that is free, each executor whole on one node (:class:`Room`).
  Shrinking changes are applied first; with ``credit_shrinks`` the cores they free fund the
  growing changes of the same plan (a revert moves executors from one job to another),
  otherwise they do not,
- raises a job that sits below its minimum (a minimum changed by its tenant) only as far as
  the room allows.

Changes that end up moving nothing are dropped; the first change per job wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler.core.bounds import upper_bound
from scheduler.core.cluster import Room
from scheduler.core.model import Change, ClusterView, JobView


def clamp_changes(
    changes: Sequence[Change],
    jobs: Mapping[str, JobView],
    cluster: ClusterView,
    *,
    credit_shrinks: bool = True,
) -> tuple[Change, ...]:
    """``changes`` made safe, in their original order."""
    seen: set[str] = set()
    wanted: list[tuple[int, JobView, Change, int]] = []
    for index, change in enumerate(changes):
        job = jobs.get(change.job_id)
        if job is None or change.job_id in seen:
            continue
        seen.add(change.job_id)
        target = min(max(change.to_executors, job.min_executors), upper_bound(job))
        wanted.append((index, job, change, target))

    result: dict[int, Change] = {}
    room = Room(cluster)
    # Shrinks first: they never need room, and the executors they remove may fund the growth.
    for index, job, change, target in wanted:
        if target >= job.executors:
            continue
        if credit_shrinks:
            room.release(job.executors - target, job.cores_per_executor, job.memory_mb)
        result[index] = _fixed(job, change, target)
    for index, job, change, target in wanted:
        if index in result:
            continue
        more = room.take(target - job.executors, job.cores_per_executor, job.memory_mb)
        result[index] = _fixed(job, change, job.executors + more)
    return tuple(c for _, c in sorted(result.items()) if c.to_executors != c.from_executors)


def _fixed(job: JobView, change: Change, target: int) -> Change:
    reason = change.reason
    if target != change.to_executors:
        reason = f"{reason} (clamped from {change.to_executors} to {target})"
    return Change(job.job_id, job.executors, target, reason)
