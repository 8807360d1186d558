"""What a job's model says about it: the executors its SLO needs, and its utility curve.

The model (:mod:`.model`) predicts latency from the utilisation ``ρ = λ·row_cost/P`` of the ``P``
cores the job can use in parallel. Latency rises with ``ρ``, so each objective has a largest
``ρ`` that still meets it, found in closed form:

- juice threshold ``J``: the job keeps up while ``ρ < 1``, and processes ``1/ρ`` of its input
  beyond, so ``ρ ≤ 1/J`` (just below 1 for ``J = 1``);
- latency threshold ``L`` at quantile ``q`` with overhead ``o`` and trigger ``T``: when the
  trigger paces the batches the latency is ``o + ρT + qT``, so ``ρ ≤ (L − o − qT)/T`` while
  ``ρ ≤ 1 − o/T``; when they run back to back it is ``(1 + q)·o/(1 − ρ)``, so
  ``ρ ≤ 1 − (1 + q)·o/L``.

Without batch timings yet, a latency objective is sized for :data:`GUESSED_UTILISATION`. The
cores needed are then ``λ·row_cost/ρ_max``; a job whose useful parallelism is below that,
or whose ``ρ_max`` is not positive (a latency floor above the threshold), cannot meet its SLO.
The demand ``λ`` is the input rate plus what drains the backlog within ``drain_s``.
"""

from __future__ import annotations

import math

from scheduler.core.bounds import upper_bound
from scheduler.core.model import JobView
from scheduler.core.policies.henge.model import JobModel, predicted_utilities
from scheduler.core.slo import LatencyStat

_QUANTILE = {LatencyStat.MEAN: 0.5, LatencyStat.P95: 0.95, LatencyStat.P99: 0.99}
GUESSED_UTILISATION = 0.5
"""The utilisation a latency SLO is sized for while the model has no batch timings yet (a job
that never kept up on one executor count): enough to catch up, refined once it has."""
_JUST_BELOW = 1 - 1e-6
"""``ρ`` must stay below 1 to keep up; sizing aims this close."""


def demand(job: JobView, drain_s: float, rate: float | None = None) -> float | None:
    """Rows per second to size for: ``rate`` (default: the measured input) plus the backlog
    drained within ``drain_s``."""
    m = job.metrics
    if m is None:
        return None
    base = m.input_rate if rate is None else rate
    if base is None:
        return None
    return base + (m.backlog_rows or 0.0) / drain_s


def max_utilisation(model: JobModel, job: JobView) -> float:
    """The largest ``ρ`` at which the model predicts the job meets its SLO (≤ 0: never)."""
    slo = job.slo
    by_juice = _JUST_BELOW if slo.juice is None else _JUST_BELOW / slo.juice
    if slo.latency_ms is None:
        return by_juice
    o = model.overhead_s
    if o is None:
        by_latency = GUESSED_UTILISATION
    else:
        latency_s = slo.latency_ms / 1000.0
        q = _QUANTILE[slo.latency_stat]
        trigger = model.trigger_s or 0.0
        paced = (latency_s - o - q * trigger) / trigger if trigger > 0 else -math.inf
        if trigger > 0 and 0 < paced <= 1 - o / trigger:
            by_latency = paced
        else:
            by_latency = 1 - (1 + q) * o / latency_s
    return by_latency if by_latency < by_juice else by_juice


def executors_needed(
    model: JobModel,
    job: JobView,
    rate: float,
    top: int | None = None,
    rho: float | None = None,
) -> int | None:
    """The fewest executors within the job's bounds (``top``: its upper bound, when known)
    that meet its SLO at ``rate``, or ``None`` when no allowed count does. ``rho``: the job's
    :func:`max_utilisation`, when known."""
    low, top = job.min_executors, upper_bound(job) if top is None else top
    if rate <= 0:
        return low
    rho = max_utilisation(model, job) if rho is None else rho
    if rho <= 0:
        return None
    cores = rate * model.row_cost_s / (rho * (1 - 1e-9))
    if (
        job.metrics is not None
        and job.metrics.max_parallelism
        and (cores > job.metrics.max_parallelism)
    ):
        return None  # more executors than the widest stage has tasks do not help
    count = max(low, math.ceil(cores / job.cores_per_executor - 1e-9))
    return count if count <= top else None


def utility_curve(
    model: JobModel, job: JobView, rate: float, need: int | None, ceiling: int, grid: int
) -> list[tuple[int, float]]:
    """(executors, predicted utility at ``rate``) from the job's minimum up to ``need`` (or up to
    ``ceiling`` when the SLO cannot be met), at ``grid`` + 1 evenly spread counts."""
    low = job.min_executors
    high = ceiling if need is None or ceiling < need else need
    span = high - low if high > low else 0
    counts = [low]
    for i in range(1, grid + 1):
        count = low + round(span * i / grid)
        if count != counts[-1]:  # the counts never fall: a repeat is the last one
            counts.append(count)
    met = need if need is not None else high + 1
    below = [n for n in counts if n < met]
    values = predicted_utilities(model, job, below, rate)
    values += [job.priority] * (len(counts) - len(below))
    return list(zip(counts, values, strict=True))
