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

from scheduler.core.model import JobView
from scheduler.core.policies.base import PerJobBaseline, Turn, require
from scheduler.core.policies.rounds import EPSILON, ceil_int
from scheduler.core.policies.timers import elapsed, per_job


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


class DhalionPolicy(PerJobBaseline[DhalionSettings, DhalionState, float]):
    """Dhalion's backpressure scale-up, one job at a time, free cores first come, first served."""

    name = "dhalion"
    settings_type = DhalionSettings
    state_type = DhalionState
    quiet_reason = "no job behind"

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

    def timers(self, state: DhalionState) -> Mapping[str, float]:
        return state.last_action

    def next_state(self, timers: dict[str, float], turn: Turn) -> DhalionState:
        return DhalionState(timers)

    def decide_job(self, job: JobView, previous: float | None, turn: Turn) -> float | None:
        """The job's last action stays its timer unless the job is scaled up now."""
        settings = self.settings
        metrics = job.metrics
        if metrics is None or metrics.juice is None:
            turn.log.note(job, "no juice measured yet", unsettled=False)
            return previous
        if metrics.juice >= settings.behind_juice:
            return previous
        since = elapsed(turn.now_s, previous)
        if since < settings.cooldown_s:
            turn.log.note(
                job,
                f"behind (juice {metrics.juice:.3f}); cooling down "
                f"{settings.cooldown_s - since:.0f} s more",
                unsettled=True,
            )
            return previous
        f = metrics.behind_fraction if metrics.behind_fraction is not None else 1 - metrics.juice
        wanted = self.wanted_executors(job, f)
        target = turn.free.grant(job, wanted)
        if target <= job.executors:
            turn.log.note(
                job,
                f"behind (juice {metrics.juice:.3f}) but no executor can be added "
                "(at its bound or no free cores)",
                unsettled=True,
            )
            return previous
        turn.log.change(
            job,
            target,
            f"behind {f:.0%} of the window (juice {metrics.juice:.3f}): "
            f"×{self.scale_factor(f):.2f}",
        )
        return turn.now_s
