"""``dstream-ratio``: Spark Streaming's (DStream) executor allocation rule, per job (DESIGN §4).

Every ``scaling_interval_s`` a job is checked: ``ratio = mean batch time / batch interval``
(the interval between micro-batch starts stands in for the DStream batch interval).

- ``ratio >= scaling_up_ratio`` (0.9): add ``max(1, round(ratio))`` executors, "in proportion"
  to how far the batches overrun, as Spark's ``requestExecutors(math.round(ratio))``;
- ``ratio <= scaling_down_ratio`` (0.3): remove one executor;
- otherwise nothing.

A job is checked again only ``scaling_interval_s`` after its previous check, whatever the
check decided. Results stay inside the job's bounds and the free cores (first come, first
served).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.core.model import JobView
from scheduler.core.policies.base import PerJobBaseline, Turn, require
from scheduler.core.policies.timers import elapsed, per_job


@dataclass(frozen=True)
class DStreamRatioSettings:
    scaling_interval_s: float = 60.0
    """``spark.streaming.dynamicAllocation.scalingInterval``: time between two checks of a job."""
    scaling_up_ratio: float = 0.9
    """``scalingUpRatio``: add executors when batch time / batch interval is at or above this."""
    scaling_down_ratio: float = 0.3
    """``scalingDownRatio``: remove one executor when the ratio is at or below this."""

    def __post_init__(self) -> None:
        require(self.scaling_interval_s >= 0, "scaling_interval_s must be >= 0")
        require(self.scaling_down_ratio >= 0, "scaling_down_ratio must be >= 0")
        require(
            self.scaling_down_ratio < self.scaling_up_ratio,
            "scaling_down_ratio must be below scaling_up_ratio",
        )


@dataclass(frozen=True)
class DStreamRatioState:
    last_check: Mapping[str, float] = per_job(float)
    """Per job id: when the job was last checked (epoch seconds)."""


def batch_ratio(job: JobView) -> float | None:
    """Mean batch time over the batch interval, or ``None`` when the metrics lack either."""
    metrics = job.metrics
    if metrics is None or metrics.mean_batch_s is None or metrics.trigger_interval_s is None:
        return None
    if metrics.trigger_interval_s <= 0:
        return None
    ratio = metrics.mean_batch_s / metrics.trigger_interval_s
    return ratio if math.isfinite(ratio) else None


def round_half_up(value: float) -> int:
    """Java's ``Math.round``: halves go up."""
    return math.floor(value + 0.5)


class DStreamRatioPolicy(PerJobBaseline[DStreamRatioSettings, DStreamRatioState, float]):
    """Batch-time-ratio allocation, one job at a time, free cores first come, first served."""

    name = "dstream-ratio"
    settings_type = DStreamRatioSettings
    state_type = DStreamRatioState
    quiet_reason = "every batch ratio inside the band"

    def timers(self, state: DStreamRatioState) -> Mapping[str, float]:
        return state.last_check

    def next_state(self, timers: dict[str, float], turn: Turn) -> DStreamRatioState:
        return DStreamRatioState(timers)

    def decide_job(self, job: JobView, previous: float | None, turn: Turn) -> float | None:
        """The job's last check stays its timer until the job is checked again."""
        settings = self.settings
        ratio = batch_ratio(job)
        if ratio is None:
            turn.log.note(job, "no batch timings yet", unsettled=False)
            return previous
        can_shrink = ratio <= settings.scaling_down_ratio and job.executors > job.min_executors
        since = elapsed(turn.now_s, previous)
        if since < settings.scaling_interval_s:
            if ratio >= settings.scaling_up_ratio or can_shrink:
                wait = settings.scaling_interval_s - since
                turn.log.note(
                    job, f"batch ratio {ratio:.2f}; next check in {wait:.0f} s", unsettled=True
                )
            return previous
        if ratio >= settings.scaling_up_ratio:
            more = max(1, round_half_up(ratio))
            target = turn.free.grant(job, job.executors + more)
            if target != job.executors:
                turn.log.change(
                    job,
                    target,
                    f"batch ratio {ratio:.2f} >= {settings.scaling_up_ratio:g}: "
                    f"asked for {more} more",
                )
            else:
                turn.log.note(
                    job,
                    f"batch ratio {ratio:.2f} but no executor can be added "
                    "(at its bound or no free cores)",
                    unsettled=True,
                )
        elif can_shrink:
            target = turn.free.grant(job, job.executors - 1)
            turn.log.change(
                job,
                target,
                f"batch ratio {ratio:.2f} <= {settings.scaling_down_ratio:g}: removed one",
            )
        return turn.now_s
