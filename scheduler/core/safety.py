"""The last word on every plan: each change pulled inside the job's bounds and the free cores.

Whatever a policy asks for, a change

- targets a job the round counted (changes to frozen, queued or unknown jobs are dropped),
- stays within [min, upper bound] (max executors and useful parallelism, :mod:`bounds`),
- grows only into cores that are free. Shrinking changes are applied first; with
  ``credit_shrinks`` the cores they give back count as free for the growing changes of the
  same plan (a revert moves executors from one job to another), otherwise they do not.

Changes that end up moving nothing are dropped; the first change per job wins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler.core.bounds import clamp_target
from scheduler.core.model import Change, JobView


def clamp_changes(
    changes: Sequence[Change],
    jobs: Mapping[str, JobView],
    free_cores: float,
    *,
    credit_shrinks: bool = True,
) -> tuple[Change, ...]:
    """``changes`` made safe, in their original order."""
    seen: set[str] = set()
    wanted: list[tuple[int, JobView, Change]] = []
    for index, change in enumerate(changes):
        job = jobs.get(change.job_id)
        if job is None or change.job_id in seen:
            continue
        seen.add(change.job_id)
        wanted.append((index, job, change))

    result: dict[int, Change] = {}
    free = max(0.0, free_cores)
    # Shrinks first: they never need room, and their cores may fund the growth below.
    for index, job, change in wanted:
        if change.to_executors >= job.executors:
            continue
        target = clamp_target(job, change.to_executors, 0.0)
        if target < job.executors and credit_shrinks:
            free += (job.executors - target) * job.cores_per_executor
        result[index] = _fixed(job, change, target)
    for index, job, change in wanted:
        if change.to_executors < job.executors:
            continue
        target = clamp_target(job, change.to_executors, free)
        if target > job.executors:
            free = max(0.0, free - (target - job.executors) * job.cores_per_executor)
        result[index] = _fixed(job, change, target)
    return tuple(c for _, c in sorted(result.items()) if c.to_executors != c.from_executors)


def _fixed(job: JobView, change: Change, target: int) -> Change:
    reason = change.reason
    if target != change.to_executors:
        reason = f"{reason} (clamped from {change.to_executors} to {target})"
    return Change(job.job_id, job.executors, target, reason)
