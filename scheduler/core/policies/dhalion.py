"""``dhalion``: Dhalion's scale-up resolver, per job (DESIGN §4; Floratou et al., VLDB 2017).

Heron's backpressure becomes "the job falls behind": juice below ``behind_juice``. With ``f``
the fraction of the window spent behind (``JobMetrics.behind_fraction``; ``1 - juice`` when the
metrics lack it), the job handled only ``1 - f`` of its load, so its executors are multiplied by
``1 / (1 - f)``, at most ``max_scale_factor`` (4×) and at least one more executor. One action
at a time: after acting on a job, the policy leaves it alone for ``cooldown_s`` so that the
change can take effect before it is judged again. Dhalion's scale-down and blacklist rules are
not part of this baseline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from scheduler.core.model import JobView, Plan, Snapshot
from scheduler.core.policies.base import BaselinePolicy, require
from scheduler.core.policies.rounds import EPSILON, FreeCores, RoundLog, ceil_int, jobs_in_order
from scheduler.core.policies.timers import elapsed, epoch_s, keep_frozen, per_job


@dataclass(frozen=True)
class DhalionSettings:
    behind_juice: float = 1.0
    """A job whose juice is below this is behind (the analogue of backpressure)."""
    max_scale_factor: float = 4.0
    """The most one scale-up may multiply a job's executors by."""
    cooldown_s: float = 60.0
    """After acting on a job, wait this long before acting on it again."""

    def __post_init__(self) -> None:
        require(0 < self.behind_juice <= 1, "behind_juice must be in (0, 1]")
        require(self.max_scale_factor >= 1, "max_scale_factor must be >= 1")
        require(self.cooldown_s >= 0, "cooldown_s must be >= 0")


@dataclass(frozen=True)
class DhalionState:
    last_action: Mapping[str, float] = per_job(float)
    """Per job id: when the policy last changed the job (epoch seconds)."""


class DhalionPolicy(BaselinePolicy[DhalionSettings, DhalionState]):
    """Dhalion's backpressure scale-up, one job at a time, free cores first come, first served."""

    name = "dhalion"
    settings_type = DhalionSettings
    state_type = DhalionState

    def scale_factor(self, behind_fraction: float) -> float:
        """``1 / (1 - f)``, capped at ``max_scale_factor`` (and there when ``f`` reaches 1)."""
        f = min(1.0, max(0.0, behind_fraction))
        cap = self.settings.max_scale_factor
        if f >= 1 - 1 / cap:
            return cap
        return min(cap, 1 / (1 - f))

    def wanted_executors(self, job: JobView, behind_fraction: float) -> int:
        factor = self.scale_factor(behind_fraction)
        cap = math.floor(job.executors * self.settings.max_scale_factor + EPSILON)
        return max(job.executors + 1, min(ceil_int(job.executors * factor), cap))

    def decide(
        self, snapshot: Snapshot, state: DhalionState, now: datetime
    ) -> tuple[Plan, DhalionState]:
        settings = self.settings
        now_s = epoch_s(now)
        free = FreeCores(snapshot.cluster.free_cores)
        log = RoundLog()
        actions: dict[str, float] = {}
        for job in jobs_in_order(snapshot):
            last = state.last_action.get(job.job_id)
            if last is not None:
                actions[job.job_id] = last
            metrics = job.metrics
            if metrics is None or metrics.juice is None:
                log.note(job, "no juice measured yet", unsettled=False)
                continue
            if metrics.juice >= settings.behind_juice:
                continue
            since = elapsed(now_s, last)
            if since < settings.cooldown_s:
                log.note(
                    job,
                    f"behind (juice {metrics.juice:.3f}); cooling down "
                    f"{settings.cooldown_s - since:.0f} s more",
                    unsettled=True,
                )
                continue
            f = (
                metrics.behind_fraction
                if metrics.behind_fraction is not None
                else 1 - metrics.juice
            )
            wanted = self.wanted_executors(job, f)
            target = free.grant(job, wanted)
            if target > job.executors:
                log.change(
                    job,
                    target,
                    f"behind {f:.0%} of the window (juice {metrics.juice:.3f}): "
                    f"×{self.scale_factor(f):.2f}",
                )
                actions[job.job_id] = now_s
            else:
                log.note(
                    job,
                    f"behind (juice {metrics.juice:.3f}) but no executor can be added "
                    "(at its bound or no free cores)",
                    unsettled=True,
                )
        actions = keep_frozen(snapshot, state.last_action, actions)
        return log.plan(snapshot, "no job behind"), DhalionState(actions)
