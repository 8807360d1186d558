"""``ds2``: the DS2 rule as the Flink Kubernetes operator's autoscaler applies it (DESIGN §4).

Per job, with executors as the unit of parallelism:

- true processing rate = processed rate / busy fraction (the job's capacity, DESIGN §2): what
  the current executors would process if they were busy all the time;
- target rate = input rate / ``target_utilization`` + backlog / ``catch_up_s``;
- parallelism = ``ceil(current × target rate / true rate)``.

A scale-down goes to no less than ``1 - scale_down_max_factor`` (40 %) of the current
parallelism at once, and happens at most once per ``scale_down_interval_s`` (one hour) per job.
A scale-up that does not fit in the free cores is skipped rather than granted in part (Flink
does not start a rescale the cluster cannot hold); one bounded by the job's max or useful
parallelism is made as far as the bound. After any rescale a job is left alone for
``stabilization_s`` so that its metrics describe the new parallelism.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.core.bounds import upper_bound
from scheduler.core.model import JobView
from scheduler.core.policies.base import PerJobBaseline, Turn, require
from scheduler.core.policies.rounds import ceil_int
from scheduler.core.policies.timers import elapsed, per_job


@dataclass(frozen=True)
class DS2Settings:
    target_utilization: float = 0.7
    """``job.autoscaler.target.utilization``: the busy fraction the new parallelism aims at."""
    catch_up_s: float = 300.0
    """``job.autoscaler.catch-up.duration``: the time in which the backlog should be worked off."""
    scale_down_max_factor: float = 0.6
    """``job.autoscaler.scale-down.max-factor``: the largest fraction of the current parallelism
    one scale-down may remove (0.6: keep at least 40 %)."""
    scale_down_interval_s: float = 3600.0
    """``job.autoscaler.scale-down.interval``: at most one scale-down per job in this time."""
    stabilization_s: float = 300.0
    """``job.autoscaler.stabilization.interval``: after a rescale, the job is not evaluated for
    this long."""

    def __post_init__(self) -> None:
        require(0 < self.target_utilization <= 1, "target_utilization must be in (0, 1]")
        require(self.catch_up_s > 0, "catch_up_s must be > 0")
        require(0 <= self.scale_down_max_factor < 1, "scale_down_max_factor must be in [0, 1)")
        require(self.scale_down_interval_s >= 0, "scale_down_interval_s must be >= 0")
        require(self.stabilization_s >= 0, "stabilization_s must be >= 0")


@dataclass(frozen=True)
class DS2Timers:
    """One job's rescale history (epoch seconds)."""

    last_rescale: float | None = None
    last_scale_down: float | None = None


@dataclass(frozen=True)
class DS2State:
    jobs: Mapping[str, DS2Timers] = per_job(DS2Timers)


class DS2Policy(PerJobBaseline[DS2Settings, DS2State, DS2Timers]):
    """DS2 sizing, one job at a time, free cores first come, first served."""

    name = "ds2"
    settings_type = DS2Settings
    state_type = DS2State
    quiet_reason = "every job at its DS2 parallelism"

    def wanted_executors(self, job: JobView) -> int | None:
        """The rule's parallelism for ``job`` (scale-down limit applied), or ``None`` without
        the rates and busy time it needs."""
        metrics = job.metrics
        if (
            metrics is None
            or metrics.input_rate is None
            or metrics.processed_rate is None
            or metrics.capacity is None
            or metrics.capacity <= 0
            or metrics.processed_rate <= 0
        ):
            return None
        busy_fraction = min(1.0, metrics.capacity)
        true_rate = metrics.processed_rate / busy_fraction
        backlog = max(0.0, metrics.backlog_rows or 0.0)
        target_rate = (
            metrics.input_rate / self.settings.target_utilization
            + backlog / self.settings.catch_up_s
        )
        factor = max(target_rate / true_rate, 1 - self.settings.scale_down_max_factor)
        if not math.isfinite(factor):
            return upper_bound(job)
        return max(0, ceil_int(job.executors * factor))

    def timers(self, state: DS2State) -> Mapping[str, DS2Timers]:
        return state.jobs

    def next_state(self, timers: dict[str, DS2Timers], turn: Turn) -> DS2State:
        return DS2State(timers)

    def decide_job(self, job: JobView, previous: DS2Timers | None, turn: Turn) -> DS2Timers:
        settings = self.settings
        free = turn.free
        history = DS2Timers() if previous is None else previous
        since_rescale = elapsed(turn.now_s, history.last_rescale)
        if since_rescale < settings.stabilization_s:
            turn.log.note(
                job,
                f"stabilizing {settings.stabilization_s - since_rescale:.0f} s more",
                unsettled=True,
            )
            return history
        wanted = self.wanted_executors(job)
        if wanted is None:
            turn.log.note(job, "no rates or busy time to size from yet", unsettled=False)
            return history
        if wanted > job.executors:
            bounded = min(wanted, upper_bound(job))
            if bounded <= job.executors:
                return history
            if not free.fits(job, bounded - job.executors):
                turn.log.note(
                    job,
                    f"scale-up to {bounded} skipped: does not fit in {free.cores:g} free cores",
                    unsettled=True,
                )
                return history
            target = free.grant(job, bounded)
            turn.log.change(job, target, f"DS2 parallelism {wanted}")
            return DS2Timers(turn.now_s, history.last_scale_down)
        if wanted < job.executors:
            since_down = elapsed(turn.now_s, history.last_scale_down)
            if since_down < settings.scale_down_interval_s:
                turn.log.note(
                    job,
                    f"scale-down to {wanted} waits "
                    f"{settings.scale_down_interval_s - since_down:.0f} s (one per interval)",
                    unsettled=True,
                )
                return history
            target = free.grant(job, wanted)
            if target < job.executors:
                turn.log.change(job, target, f"DS2 parallelism {wanted}")
                return DS2Timers(turn.now_s, turn.now_s)
        return history
