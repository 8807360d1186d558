"""The limits no plan may cross: a job's min and max, its useful parallelism, free capacity."""

from __future__ import annotations

import math

from scheduler.core.model import ClusterView, JobView


def upper_bound(job: JobView) -> int:
    """The most executors the job may hold: its max, and no more than can run tasks."""
    # (conditionals rather than min/max: several calls per job and round)
    top, useful = job.max_executors, job.useful_executors()
    top = useful if useful < top else top
    return top if top > job.min_executors else job.min_executors


def executors_that_fit(job: JobView, free_cores: float) -> int:
    """How many more of this job's executors fit in ``free_cores``."""
    if job.cores_per_executor <= 0:
        return 0
    return max(0, math.floor(free_cores / job.cores_per_executor + 1e-9))


def clamp_target(job: JobView, wanted: int, free_cores: float) -> int:
    """``wanted`` pulled inside [min, upper bound], growing no further than the free cores allow.

    Shrinking is always allowed down to the minimum; growth is limited by what fits.
    """
    top = upper_bound(job)
    target = min(max(wanted, job.min_executors), top)
    if target > job.executors:
        target = min(target, job.executors + executors_that_fit(job, free_cores))
        target = max(target, min(job.executors, top))
    return max(target, job.min_executors)


def free_cores(cluster: ClusterView) -> float:
    return cluster.free_cores
