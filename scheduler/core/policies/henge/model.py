"""A per-job performance model, fitted online from the job's windows (``henge`` only).

A Structured Streaming job runs micro-batches. The model has three numbers:

- ``row_cost_s``: busy core-seconds per processed row (``capacity × cores / processed rate``),
  the inverse of "rows per busy core-second"; once known, not read from a window its batches
  outlast, and then moved down toward what the batches ending in it allow when that is less;
- ``overhead_s``: the fixed part of a batch's duration (planning, commit, scheduling): the
  intercept of the window's batch durations against their rows when its per-row part agrees
  with the row cost over the cores, else (or without a fit) ``mean batch duration − mean rows
  per batch × row cost / cores``, except that a known overhead is kept through a fit that
  disagrees;
- ``trigger_s``: the configured trigger interval, seen when batches leave idle gaps between
  them (``None``: batches run back to back, i.e. no trigger or one shorter than the batches).

Each is a moving average over the reports (weight ``alpha`` for the newest). With ``P`` cores
usable in parallel (executors × cores, at most the job's max parallelism) and input ``λ`` rows/s,
the utilisation is ``ρ = λ·row_cost/P``. For ``ρ ≥ 1`` the job falls behind: juice ``1/ρ``,
latency unbounded. Otherwise batches last ``d = o/(1−ρ)`` back to back, or ``d = o + ρ·T`` when
the trigger ``T`` paces them (``T ≥ o/(1−ρ)``), with interval ``I = max(T, d)``; the mean latency
is ``d + I/2`` and the p-th percentile ``d + (p/100)·I`` (DESIGN §2 "Latency"). Predictions are
monotone in the executor count, so searches bisect.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from scheduler.core.model import BatchFit, JobMetrics, JobView
from scheduler.core.slo import LatencyStat, meets_slo, utility

_GAP = 0.1
"""Batches are paced by a trigger when the interval exceeds the duration by this fraction."""

KEEPING_UP = 0.99
"""A window whose juice is below this is behind (its batches drain a backlog)."""

_GAPS_SEEN = 3
"""Gaps between batch starts a window must span for its mean gap to be read as the trigger."""

_FIT_AGREES = 2.0
"""How far the per-row part of a fit of batch durations may be from the row cost over the usable
cores (a factor) for its intercept to be read as the per-batch overhead."""

_QUANTILE = {LatencyStat.MEAN: 0.5, LatencyStat.P95: 0.95, LatencyStat.P99: 0.99}


class JobModel(NamedTuple):
    row_cost_s: float
    overhead_s: float | None
    trigger_s: float | None
    windows: int
    last_report: float | None
    """POSIX time of the newest report folded in (a report is folded in once)."""
    executors: int | None = None
    """The executor count of the newest window folded in."""
    count_since: float | None = None
    """POSIX time since which every report has run on that count, as far as the windows show
    (``None``: not known)."""


def models_from_json(data: Any) -> dict[str, JobModel]:
    """Per-job models from their stored form (each a list of its fields, as ``list(model)``)."""
    return {
        str(k): JobModel(
            float(v[0]),
            _optional(v[1]),
            _optional(v[2]),
            int(v[3]),
            _optional(v[4]),
            int(v[5]) if len(v) > 5 and v[5] is not None else None,
            _optional(v[6]) if len(v) > 6 else None,
        )
        for k, v in (data or {}).items()
    }


def _optional(value: Any) -> float | None:
    return None if value is None else float(value)


def _blend(old: float | None, new: float | None, alpha: float) -> float | None:
    if new is None:
        return old
    if old is None:
        return new
    return old + alpha * (new - old)


def parallel_cores(job: JobView, executors: int) -> float:
    cores = float(executors * job.cores_per_executor)
    metrics = job.metrics
    if metrics is not None and metrics.max_parallelism and metrics.max_parallelism < cores:
        return float(metrics.max_parallelism)
    return cores


def _behind(m: JobMetrics) -> bool:
    return bool(m.behind_fraction) or (m.juice is not None and m.juice < KEEPING_UP)


def _gaps_show_trigger(m: JobMetrics) -> bool:
    """Whether a window whose batches leave gaps shows the trigger interval in them.

    It does when no backlog held the rows (they waited no longer than one gap and one batch),
    even if a few batches ran late (a job near its SLO often has some). A window working off a
    backlog shows gaps too (one long batch, then short ones), but its rows waited longer. A
    window with late batches must also span several gaps (:data:`_GAPS_SEEN`): with one or two
    long batches in it, one that began before the window skews the mean gap against the mean
    duration.
    """
    assert m.trigger_interval_s is not None and m.mean_batch_s is not None
    gap = m.trigger_interval_s
    waited_s = m.latency_ms / 1000.0 if m.latency_ms is not None else math.inf
    if waited_s > m.mean_batch_s + gap:
        return False
    return not _behind(m) or not m.seconds or _GAPS_SEEN * gap <= m.seconds


def _outlasts_window(m: JobMetrics) -> bool:
    """Whether the window's batches last as long as the window or longer.

    Such a batch counts all its rows in the one window it ends in and none in the others,
    while its busy time is spread over all of them. The windows without rows have nothing to
    divide by and are skipped, so the one with them, read alone, puts the cost per row too low
    by the ratio of window to batch (half, for a 120-s batch in a 60-s window): a job behind on
    a few executors with a large batch limit would look cheaper than it is by that ratio. (A
    job's first window is read as it is: there is no cost to keep yet.)
    """
    seconds, batch_s = m.seconds, m.mean_batch_s
    return seconds is not None and seconds > 0 and batch_s is not None and batch_s >= seconds


def _fit_agrees(fit: BatchFit, row_s: float) -> bool:
    """Whether the fit of a window's batch durations against their rows costs a row about what
    the busy time does (``row_s``: the row cost over the usable cores), within
    :data:`_FIT_AGREES`.

    When it does not, the batches did not all run on the cores the window reports: a batch
    begun before a cut finishes fast for its rows, executors that register during a batch
    shorten it. The fit's intercept is then an extrapolation, not a fixed part of a batch:
    fits of three or four such batches read 17 to 24 s (their per-row part −0.12 to 0.26 times
    the row cost) for jobs whose batches have 0.35 s of fixed time. An overhead above the SLO
    sets the job's model aside."""
    return row_s > 0 and row_s / _FIT_AGREES <= fit.row_s <= row_s * _FIT_AGREES


def _count_since(
    previous: JobModel | None, m: JobMetrics, executors: int, stamp: float | None
) -> float | None:
    """When the job's reports began to run on ``executors``, as far as the windows show: kept
    while the count stays, else the start of a window whose reports all ran on it, else (the
    count changed inside the window) its end."""
    if stamp is None:
        return None
    if not m.steady:
        return stamp
    if (
        previous is not None
        and previous.executors == executors
        and previous.count_since is not None
    ):
        return previous.count_since
    return stamp - m.seconds if m.seconds else stamp


def _whole_batch_bound(m: JobMetrics, cores: float, held_s: float | None) -> float:
    """The most a row can cost by the batches that ended in the window, when they ran wholly on
    ``cores`` (the count has held ``held_s`` seconds, at least the window and a batch): a batch
    holds at most the job's usable cores for its duration. ``inf`` when that is not known.

    The cost kept through windows a batch outlasts is the one read before them; if that one was
    too high, it would stay so while the batches are long, and a model that predicts no utility
    is never found wrong by a job that earns none. A job cut from 15 executors to one read three
    times its cost from a window whose busy time counted a batch still running at its end (its
    rows not yet), then kept it for hours: its model found no count that met its SLO. A batch
    that began before the count changed ran partly on other cores, and would bound nothing (a
    job cut from many executors to one finished a batch of 1.56 million rows in 215 s)."""
    batch_s, rows, seconds = m.mean_batch_s, m.mean_batch_rows, m.seconds
    if batch_s is None or not rows or rows <= 0 or held_s is None or seconds is None:
        return math.inf
    if held_s < seconds + batch_s:
        return math.inf
    return batch_s * cores / rows


def observe(previous: JobModel | None, job: JobView, alpha: float) -> JobModel | None:
    """``previous`` updated with the job's current window (unchanged if it has nothing new)."""
    m = job.metrics
    if m is None:
        return previous
    stamp = job.last_report_at.timestamp() if job.last_report_at is not None else None
    if (
        previous is not None
        and stamp is not None
        and previous.last_report is not None
        and stamp <= previous.last_report
    ):
        return previous
    rate, capacity = m.processed_rate, m.capacity
    if not rate or rate <= 0 or capacity is None or capacity <= 0:
        return previous
    executors = m.executors_reported or job.executors
    all_cores = float(executors * job.cores_per_executor)
    cores = min(all_cores, float(m.max_parallelism)) if m.max_parallelism else all_cores
    if cores <= 0:
        return previous
    # Busy core-seconds per processed row over the window: the executor count may have changed
    # inside it, and a job that is behind still spends the same work per row.
    if m.busy_core_s is not None and m.seconds:
        cost = m.busy_core_s / (rate * m.seconds)
    else:
        cost = capacity * all_cores / rate
    since = _count_since(previous, m, executors, stamp)
    if previous is not None and _outlasts_window(m):
        held_s = stamp - since if stamp is not None and since is not None else None
        cost = min(previous.row_cost_s, _whole_batch_bound(m, cores, held_s))
    overhead: float | None = None
    trigger: float | None = None
    # Batch timing is read only from windows on one executor count (batches on another count
    # ran on other cores). The per-batch overhead comes from the batches' durations against
    # their sizes when those vary and agree with the row cost (else, once known, it is kept),
    # otherwise from the means. Batches back to back show there is no trigger only while the
    # job keeps up (a job working off a backlog runs them back to back whatever its trigger).
    if m.mean_batch_s is not None and m.trigger_interval_s and m.steady:
        fit = m.batch_fit
        if fit is not None and _fit_agrees(fit, cost / cores):
            overhead = fit.overhead_s
        elif fit is None or previous is None or previous.overhead_s is None:
            rows = m.mean_batch_rows if m.mean_batch_rows else rate * m.trigger_interval_s
            overhead = max(0.0, m.mean_batch_s - rows * cost / cores)
        paced = m.trigger_interval_s > m.mean_batch_s * (1 + _GAP)
        if paced and _gaps_show_trigger(m):
            trigger = m.trigger_interval_s
        elif not paced and not _behind(m):
            trigger = 0.0
    if previous is None:
        return JobModel(cost, overhead, trigger, 1, stamp, executors, since)
    return JobModel(  # (positional: a round folds in a window of every job)
        previous.row_cost_s + alpha * (cost - previous.row_cost_s),
        _blend(previous.overhead_s, overhead, alpha),
        _blend(previous.trigger_s, trigger, alpha),
        previous.windows + 1,
        stamp,
        executors,
        since,
    )


def predict(
    model: JobModel, job: JobView, executors: int, input_rate: float
) -> tuple[float, float | None]:
    """(juice, latency in ms) with ``executors`` at ``input_rate``; latency ``None`` if unknown."""
    quantile = _QUANTILE[job.slo.latency_stat]
    return _performance(model, quantile, parallel_cores(job, executors), input_rate)


def _performance(
    model: JobModel, quantile: float, cores: float, input_rate: float
) -> tuple[float, float | None]:
    if cores <= 0:
        return 0.0, math.inf
    rho = input_rate * model.row_cost_s / cores
    if rho >= 1:
        return 1.0 / rho, math.inf
    if model.overhead_s is None:
        return 1.0, None
    back_to_back = model.overhead_s / (1 - rho)
    trigger = model.trigger_s or 0.0
    if trigger >= back_to_back:
        duration, interval = model.overhead_s + rho * trigger, trigger
    else:
        duration = interval = back_to_back
    return 1.0, (duration + quantile * interval) * 1000.0


def predicted_utility(model: JobModel, job: JobView, executors: int, input_rate: float) -> float:
    juice, latency = predict(model, job, executors, input_rate)
    return utility(job.slo, job.priority, juice, latency)


def predicted_utilities(
    model: JobModel, job: JobView, counts: list[int], input_rate: float
) -> list[float]:
    """:func:`predicted_utility` at each of ``counts`` (the job's constants looked up once)."""
    quantile = _QUANTILE[job.slo.latency_stat]
    per_executor = float(job.cores_per_executor)
    widest = job.metrics.max_parallelism if job.metrics is not None else None
    slo, priority = job.slo, job.priority
    widest_cores = float(widest) if widest else math.inf
    values = []
    for count in counts:
        cores = count * per_executor
        cores = widest_cores if cores > widest_cores else cores
        juice, latency = _performance(model, quantile, cores, input_rate)
        values.append(utility(slo, priority, juice, latency))
    return values


def usable(model: JobModel | None, job: JobView, min_windows: int) -> bool:
    """Whether the model can size ``job``: trusted, and covering the job's objectives."""
    if model is None or model.windows < min_windows:
        return False
    m = job.metrics
    if m is None or not m.input_rate or m.input_rate <= 0:
        return False
    return not (job.slo.has_latency and model.overhead_s is None)


def sizes(model: JobModel | None, job: JobView, min_windows: int) -> bool:
    """Whether the model can size ``job``: ``min_windows`` windows and a measured input. Unlike
    :func:`usable` it needs no batch timings for a latency SLO: until the job has kept up on one
    executor count, sizing for throughput at a guessed utilisation comes first."""
    if model is None or model.windows < min_windows:
        return False
    m = job.metrics
    return m is not None and bool(m.input_rate) and (m.input_rate or 0.0) > 0


def smallest(low: int, high: int, ok: Callable[[int], bool]) -> int | None:
    """The smallest ``n`` in [low, high] with ``ok(n)`` for a monotone ``ok``, or ``None``."""
    if low > high or not ok(high):
        return None
    while low < high:
        mid = (low + high) // 2
        if ok(mid):
            high = mid
        else:
            low = mid + 1
    return low


def meets_at(model: JobModel, job: JobView, executors: int, input_rate: float) -> bool:
    return meets_slo(predicted_utility(model, job, executors, input_rate), job.priority)
