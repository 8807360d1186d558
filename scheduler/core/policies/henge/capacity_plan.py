"""The cores every SLO needs over the time ahead, per priority tier, against the cluster's cores,
and which tiers and jobs would miss when they do not fit (DESIGN §8, "plans").

Each job needs, at each point of the horizon, the smallest executor count its model predicts
meets its SLO at the input expected then: the highest mean of its forecast over that point when
its forecast is trusted and reaches it, otherwise its input now. (The mean, not the upper
quantile a single job's options show: the jobs' inputs do not all reach their upper quantiles
at once, and the sum of those would overstate what the cluster needs.) A job whose model the
policy would not trust is counted at what it holds (at least its minimum), and said so. A job
whose model sees no count in its range meeting its SLO is counted at the least that keeps up
with its input or, when more, the least that earns the most utility the model sees, and said so
(a model learnt while the job ran far from its SLO can put its per-batch time above the
objective, and where the objective truly cannot be met, more than that earns nothing).

What fits is found as the scheduler would share the cores out: every job keeps its minimum (as
far as there is room, higher priorities first), and what each needs beyond it goes to the jobs
of higher priority first (within a tier, the smaller needs first). A tier whose jobs do not all
get what they need misses, short by the cores they lack. Lower tiers give way first as the
cores shrink, so the lowest tier that misses is the one dropped first.

Pure: the API, the CLI and the dashboard call :func:`capacity_plan` with what the registry and
the cluster view hold; ``capacity_cores`` is what-if material (fewer nodes, other cores).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler.core.bounds import upper_bound
from scheduler.core.model import ClusterView, JobView
from scheduler.core.policies.henge.model import (
    KEEPING_UP,
    JobModel,
    meets_at,
    predict,
    predicted_utilities,
    smallest,
)
from scheduler.core.policies.henge.options import distrust
from scheduler.core.policies.henge.product_settings import ProductSettings

DEFAULT_HORIZON_S = 3600.0
"""How far ahead the plan looks unless told."""

MAX_POINTS = 240
"""Points of the horizon at most; a longer horizon gets wider points (each valued at the
highest input within it)."""

DEFAULT_STEP_S = 60.0
"""The width of a point when no trusted forecast says a finer one."""


@dataclass(frozen=True)
class JobNeed:
    """What one job needs at each point of the horizon."""

    job_id: str
    name: str
    tenant: str
    priority: float
    cores_per_executor: int
    min_executors: int
    held: int
    """Executors it holds now."""
    executors: tuple[int, ...]
    """Executors it needs at each point."""
    sized: bool
    """Whether its model sized it; otherwise it is counted at what it holds."""
    note: str
    """Why it is not sized, or that its SLO is out of its range's reach, or ``""``."""
    forecast: bool
    """Whether a trusted forecast gave its input ahead (otherwise: its input now)."""

    def cores(self, k: int) -> int:
        return self.executors[k] * self.cores_per_executor

    def extra_cores(self, k: int) -> int:
        """Cores it needs at point ``k`` beyond its minimum."""
        return max(0, self.executors[k] - self.min_executors) * self.cores_per_executor


@dataclass(frozen=True)
class TierNeed:
    """The jobs of one priority and what they need together."""

    priority: float
    jobs: tuple[str, ...]
    cores: tuple[int, ...]
    """Cores the tier's jobs need at each point."""
    short_cores: int
    """At its worst point, the cores the tier's jobs need that are not left to them (0: it
    fits all along)."""
    short_at: datetime | None
    """That point's start (``None`` when it fits)."""
    missing: tuple[str, ...]
    """Its jobs that would miss their SLO at that point."""

    @property
    def fits(self) -> bool:
        return self.short_cores == 0


@dataclass(frozen=True)
class CapacityPlan:
    start: datetime
    step_s: float
    capacity_cores: float
    """The cores the plan shares out (the ready nodes' unless told otherwise)."""
    jobs: tuple[JobNeed, ...]
    tiers: tuple[TierNeed, ...]
    """Highest priority first."""
    total: tuple[int, ...]
    """Cores all the jobs need at each point."""

    @property
    def points(self) -> int:
        return len(self.total)

    def at(self, k: int) -> datetime:
        return self.start + timedelta(seconds=k * self.step_s)

    @property
    def tightest(self) -> int:
        """The point where the jobs need the most cores (the first such)."""
        return max(range(self.points), key=lambda k: (self.total[k], -k)) if self.total else 0

    @property
    def peak_cores(self) -> int:
        return self.total[self.tightest] if self.total else 0

    @property
    def first_dropped(self) -> TierNeed | None:
        """The lowest tier that misses: the first to give way as the cores shrink."""
        short = [t for t in self.tiers if not t.fits]
        return short[-1] if short else None


def capacity_plan(
    jobs: Sequence[JobView],
    models: Mapping[str, JobModel],
    errors: Mapping[str, float],
    forecasts_trusted: Mapping[str, bool],
    settings: ProductSettings,
    now: datetime,
    capacity_cores: float,
    horizon_s: float = DEFAULT_HORIZON_S,
) -> CapacityPlan:
    """The plan of ``jobs`` (the caller passes the admitted ones) over ``horizon_s`` from
    ``now`` against ``capacity_cores``, with the models and recent errors the policy keeps and
    whether each job's forecast is trusted (see the module docstring)."""
    if not horizon_s > 0:
        raise ValueError("horizon_s must be > 0")
    forecast_step = min(
        (
            j.forecast.step_s
            for j in jobs
            if j.forecast is not None and forecasts_trusted.get(j.job_id)
        ),
        default=DEFAULT_STEP_S,
    )
    step = max(forecast_step, horizon_s / MAX_POINTS)
    points = max(1, math.ceil(horizon_s / step - 1e-9))
    moments = [now + timedelta(seconds=k * step) for k in range(points)]
    needs = tuple(
        _need(
            j,
            models.get(j.job_id),
            errors.get(j.job_id),
            forecasts_trusted.get(j.job_id, False),
            settings,
            moments,
            step,
        )
        for j in jobs
    )
    total = tuple(sum(n.cores(k) for n in needs) for k in range(points))
    return CapacityPlan(
        now, step, capacity_cores, needs, _tiers(needs, capacity_cores, moments), total
    )


def cores_without(cluster: ClusterView, nodes: int) -> float:
    """The ready nodes' cores without the ``nodes`` largest of them (what if they were gone)."""
    ready = sorted((n.cores for n in cluster.nodes if n.ready), reverse=True)
    if not 0 <= nodes <= len(ready):
        raise ValueError(f"the cluster has {len(ready)} ready nodes; cannot plan without {nodes}")
    return float(sum(ready[nodes:]))


def _need(
    job: JobView,
    model: JobModel | None,
    error: float | None,
    forecast_trusted: bool,
    settings: ProductSettings,
    moments: Sequence[datetime],
    step: float,
) -> JobNeed:
    untrusted = distrust(job, model, error, settings)
    forecast = job.forecast if forecast_trusted else None
    rate = job.metrics.input_rate if job.metrics is not None else None
    if untrusted is not None or model is None or rate is None:
        held = (max(job.executors, job.min_executors),) * len(moments)
        return _job_need(job, held, False, untrusted or "no model", forecast is not None)
    low, high = job.min_executors, max(job.min_executors, upper_bound(job))
    known: dict[float, tuple[int, bool]] = {}
    counts = []
    for moment in moments:
        # The forecast's steps that overlap the point [moment, moment + step).
        ahead = (
            forecast.highest_mean(moment, max(0.0, step - forecast.step_s))
            if forecast is not None
            else None
        )
        at = rate if ahead is None else ahead
        if at not in known:
            known[at] = _needed(model, job, low, high, at)
        counts.append(known[at])
    note = ""
    if not all(met for _, met in counts):
        note = (
            f"its model sees no count up to {high} meeting its SLO at some of the input ahead: "
            "counted there at the least that keeps up with the input and earns the most it can"
        )
    return _job_need(job, tuple(n for n, _ in counts), True, note, forecast is not None)


def _job_need(
    job: JobView, executors: tuple[int, ...], sized: bool, note: str, forecast: bool
) -> JobNeed:
    return JobNeed(
        job.job_id,
        job.name,
        job.tenant,
        job.priority,
        job.cores_per_executor,
        job.min_executors,
        job.executors,
        executors,
        sized,
        note,
        forecast,
    )


def _needed(model: JobModel, job: JobView, low: int, high: int, rate: float) -> tuple[int, bool]:
    """The smallest count that meets the SLO at ``rate`` and ``True``; without one, ``False``
    and the smallest that keeps up with the input (the most, when none does) or, when more, the
    smallest that earns the most utility the model sees."""
    meets = smallest(low, high, lambda n: meets_at(model, job, n, rate))
    if meets is not None:
        return meets, True
    keeps = smallest(low, high, lambda n: predict(model, job, n, rate)[0] >= KEEPING_UP)
    counts = list(range(low, high + 1))
    values = predicted_utilities(model, job, counts, rate)
    best = max(values)
    saturated = next(n for n, v in zip(counts, values, strict=True) if v >= best - 1e-9)
    return max(high if keeps is None else keeps, saturated), False


def _tiers(
    needs: Sequence[JobNeed], capacity: float, moments: Sequence[datetime]
) -> tuple[TierNeed, ...]:
    priorities = sorted({n.priority for n in needs}, reverse=True)
    short: dict[float, int] = dict.fromkeys(priorities, 0)
    worst: dict[float, tuple[int, tuple[str, ...]]] = {}
    previous: tuple[int, ...] | None = None
    for k in range(len(moments)):
        counts = tuple(n.executors[k] for n in needs)
        if counts == previous:  # (the same needs share out the same way)
            continue
        previous = counts
        for priority, lacking, missing in _share(needs, capacity, k):
            if lacking > short[priority]:
                short[priority] = lacking
                worst[priority] = (k, missing)
    tiers = []
    for priority in priorities:
        members = [n for n in needs if n.priority == priority]
        worst_point = worst.get(priority)
        tiers.append(
            TierNeed(
                priority,
                tuple(n.job_id for n in members),
                tuple(sum(n.cores(i) for n in members) for i in range(len(moments))),
                short[priority],
                moments[worst_point[0]] if worst_point is not None else None,
                worst_point[1] if worst_point is not None else (),
            )
        )
    return tuple(tiers)


def _share(
    needs: Sequence[JobNeed], capacity: float, k: int
) -> list[tuple[float, int, tuple[str, ...]]]:
    """At point ``k``: each tier that misses, the cores it lacks and its jobs that miss.

    Minimums come first, higher priorities first: a job whose minimum finds no room lacks all
    it needs. Then what each job needs beyond its minimum, in the same order."""
    order = sorted(needs, key=lambda n: (-n.priority, n.extra_cores(k), n.job_id))
    left = capacity
    placed = []
    lacking: dict[float, int] = {}
    missing: dict[float, list[str]] = {}

    def miss(need: JobNeed, cores: int) -> None:
        lacking[need.priority] = lacking.get(need.priority, 0) + cores
        missing.setdefault(need.priority, []).append(need.job_id)

    for need in order:
        minimum = need.min_executors * need.cores_per_executor
        if minimum <= left + 1e-9:
            left -= minimum
            placed.append(need)
        else:
            miss(need, need.cores(k))
    for need in placed:
        extra = need.extra_cores(k)
        if extra <= left + 1e-9:
            left -= extra
        else:
            miss(need, extra)
    return [(p, lacking[p], tuple(missing[p])) for p in lacking]
