"""How many executors a reconfiguration gives, and how many a converged job can give back.

- ``henge-paper``: eq. 2.4, extra executors ``= ceil((capacity / capacity_threshold − 1) × step)``;
  a job at or below the threshold is not congested and gets nothing.
- ``henge``: from the job's model (:mod:`model`), the smallest executor count that meets
  the SLO with ``headroom`` more input (or, failing that, at the measured input). When no
  allowed count meets the SLO, the job is *unattainable* if even its upper bound would not raise
  its utility by ``min_gain`` of its priority; otherwise it gets the smallest count that comes
  within half of ``min_gain`` of the best predicted utility.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scheduler.core.bounds import upper_bound
from scheduler.core.model import JobView
from scheduler.core.policies.henge.model import (
    JobModel,
    meets_at,
    predicted_utility,
    smallest,
)
from scheduler.core.policies.henge.settings import HengeSettings


def paper_extra(capacity: float, capacity_threshold: float, step: int) -> int:
    """Eq. 2.4; 0 for a job that is not congested. Float noise just above an integer is ignored."""
    if capacity <= capacity_threshold:
        return 0
    return max(1, math.ceil((capacity / capacity_threshold - 1) * step - 1e-9))


@dataclass(frozen=True)
class Sizing:
    """A growth target for a candidate, or why there is none."""

    target: int | None
    note: str
    unattainable: bool = False


def paper_target(job: JobView, settings: HengeSettings) -> Sizing:
    capacity = job.metrics.capacity if job.metrics is not None else None
    if capacity is None:
        return Sizing(None, "no capacity metric")
    extra = paper_extra(capacity, settings.capacity_threshold, settings.step)
    if extra == 0:
        return Sizing(
            None, f"not congested (capacity {capacity:.2f} <= {settings.capacity_threshold:g})"
        )
    return Sizing(
        min(job.executors + extra, upper_bound(job)),
        f"eq. 2.4: capacity {capacity:.2f} -> +{extra}",
    )


def model_target(job: JobView, model: JobModel, settings: HengeSettings) -> Sizing:
    """The model's growth target for a job missing its SLO (``None`` + unattainable flag)."""
    assert job.metrics is not None and job.metrics.input_rate is not None
    rate = job.metrics.input_rate
    top = upper_bound(job)
    low = job.executors + 1
    if low > top:
        return Sizing(None, "at its upper bound")
    if meets_at(model, job, top, rate):
        padded = rate * (1 + settings.headroom)
        target = smallest(low, top, lambda n: meets_at(model, job, n, padded))
        if target is None:
            target = smallest(low, top, lambda n: meets_at(model, job, n, rate))
        assert target is not None
        return Sizing(target, f"model: {target} executor(s) meet the SLO")
    best = predicted_utility(model, job, top, rate)
    if best - job.utility < settings.min_gain * job.priority:
        return Sizing(
            None,
            f"model: SLO unattainable (best predicted utility {best:.3g} at {top} executor(s))",
            unattainable=True,
        )
    goal = best - settings.min_gain * job.priority / 2
    target = smallest(low, top, lambda n: predicted_utility(model, job, n, rate) >= goal)
    target = top if target is None else target
    return Sizing(target, f"model: SLO out of reach, {target} executor(s) near the best utility")


def model_need(job: JobView, model: JobModel, settings: HengeSettings) -> int | None:
    """Executors a job meeting its SLO needs (with headroom), when fewer than it holds by at
    least ``give_back_min_fraction``; ``None`` when there is nothing worth giving back."""
    assert job.metrics is not None and job.metrics.input_rate is not None
    padded = job.metrics.input_rate * (1 + settings.give_back_headroom)
    surplus = max(1, math.ceil(settings.give_back_min_fraction * job.executors - 1e-9))
    most = job.executors - surplus
    if most < job.min_executors or not meets_at(model, job, most, padded):
        return None
    return smallest(job.min_executors, most, lambda n: meets_at(model, job, n, padded))
