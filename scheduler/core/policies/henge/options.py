"""What each executor count would give a job: its options, from the model ``henge`` keeps of it
(DESIGN §8, "plans").

For counts from the job's minimum to the most it can use, the predicted juice, latency (the
statistic its SLO names) and utility at its input now and at the peak of its forecast, and the
executor core-hours a day that count takes. The smallest count that meets the SLO now, and the
smallest that meets it at the peak as well, are named. The predictions are those the policy
sizes the job with (:func:`.model.predict`), and they are given only when the policy would trust
the model to size the job; otherwise the options say why not, and give no numbers.

Pure: the API, the CLI and the dashboard call :func:`job_options` with what the registry holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from scheduler.core.bounds import upper_bound
from scheduler.core.model import InputForecast, JobView
from scheduler.core.policies.henge.model import JobModel, predict, smallest, usable
from scheduler.core.policies.henge.product_settings import ProductSettings
from scheduler.core.slo import meets_slo, utility

DEFAULT_ROWS = 24
"""Counts listed at most; a job with a wider range gets an even spread of them that always
includes its minimum, its maximum, what it holds and the counts named."""

PEAK_AHEAD_S = 24 * 3600.0
"""How far ahead the peak is looked for (as far as the forecast reaches)."""


@dataclass(frozen=True)
class Outcome:
    """What one count is predicted to give at one input rate."""

    juice: float
    latency_ms: float | None
    """The SLO's latency statistic; ``None`` when infinite (the input outruns the count)."""
    utility: float
    meets_slo: bool


@dataclass(frozen=True)
class Option:
    executors: int
    now: Outcome
    peak: Outcome | None
    """At the forecast's peak (``None`` without a forecast that reaches ahead)."""
    core_hours_per_day: float


@dataclass(frozen=True)
class Peak:
    """The highest upper quantile of the job's forecast ahead, and when it comes."""

    rate: float
    at: datetime
    trusted: bool
    """Whether the forecast has beaten the seasonal-naive one (the policy acts on it only
    then)."""


@dataclass(frozen=True)
class JobOptions:
    job_id: str
    trusted: bool
    """Whether the model may size the job; without it the options hold no numbers."""
    reason: str
    """Why the model is trusted or not, in a sentence."""
    input_rate: float | None
    """Rows per second in the job's current window."""
    peak: Peak | None
    held: int
    """Executors the job holds now."""
    options: tuple[Option, ...] = ()
    meets_now: int | None = None
    """The smallest count that meets the SLO at the input now (``None``: none in range)."""
    meets_peak: int | None = None
    """The smallest count that meets it now and at the peak."""


def job_options(
    job: JobView,
    model: JobModel | None,
    error: float | None,
    settings: ProductSettings,
    now: datetime,
    forecast_trusted: bool = False,
    rows: int = DEFAULT_ROWS,
) -> JobOptions:
    """The options of ``job`` with its ``model`` and the model's recent ``error`` (a fraction of
    the priority), as :class:`~.product.HengeProductPolicy` with ``settings`` would trust them;
    ``forecast_trusted`` says whether its forecast has beaten the seasonal-naive one."""
    rate = job.metrics.input_rate if job.metrics is not None else None
    peak = _peak(job.forecast, now, forecast_trusted)
    untrusted = distrust(job, model, error, settings)
    if untrusted is not None or model is None or rate is None:
        reason = untrusted or "no model"
        return JobOptions(job.job_id, False, reason, rate, peak, job.executors)
    low, high = job.min_executors, max(job.min_executors, upper_bound(job))
    meets_now = smallest(low, high, lambda n: _outcome(model, job, n, rate).meets_slo)
    meets_peak = None
    if peak is not None:
        meets_peak = smallest(
            low,
            high,
            lambda n: (
                _outcome(model, job, n, rate).meets_slo
                and _outcome(model, job, n, peak.rate).meets_slo
            ),
        )
    named = [n for n in (job.executors, meets_now, meets_peak) if n is not None]
    options = tuple(
        Option(
            n,
            _outcome(model, job, n, rate),
            _outcome(model, job, n, peak.rate) if peak is not None else None,
            n * job.cores_per_executor * 24.0,
        )
        for n in _counts(low, high, named, rows)
    )
    reason = f"model from {model.windows} windows, recent error {error or 0.0:.3f} of priority"
    return JobOptions(
        job.job_id, True, reason, rate, peak, job.executors, options, meets_now, meets_peak
    )


def distrust(
    job: JobView, model: JobModel | None, error: float | None, settings: ProductSettings
) -> str | None:
    """Why the policy would not size ``job`` with ``model``, or ``None`` when it would."""
    if model is None:
        return "no model yet: the job has not reported a window the model could learn from"
    if model.windows < settings.model_min_windows:
        return (
            f"the model has learned from {model.windows} windows; "
            f"it is trusted from {settings.model_min_windows}"
        )
    if error is not None and error > settings.model_max_error:
        return (
            f"the model's recent error, {error:.3f} of the priority, is above "
            f"model_max_error ({settings.model_max_error:g})"
        )
    if not usable(model, job, settings.model_min_windows):
        if job.metrics is None or not job.metrics.input_rate:
            return "no input measured in the job's current window"
        return "no batch timings yet: its latency cannot be predicted"
    return None


def _outcome(model: JobModel, job: JobView, executors: int, rate: float) -> Outcome:
    juice, latency = predict(model, job, executors, rate)
    value = utility(job.slo, job.priority, juice, latency)
    finite = latency if latency is not None and latency != float("inf") else None
    return Outcome(juice, finite, value, meets_slo(value, job.priority))


def _peak(forecast: InputForecast | None, now: datetime, trusted: bool) -> Peak | None:
    found = forecast.peak_upper(now, PEAK_AHEAD_S) if forecast is not None else None
    return Peak(found[0], found[1], trusted) if found is not None else None


def _counts(low: int, high: int, named: list[int], rows: int) -> list[int]:
    """Every count from ``low`` to ``high``, or at most about ``rows`` of them spread evenly,
    with both ends and the ``named`` ones always in."""
    if high - low + 1 <= rows:
        return list(range(low, high + 1))
    step = (high - low) / (rows - 1)
    spread = {low + round(k * step) for k in range(rows)}
    return sorted(spread | {low, high} | {n for n in named if low <= n <= high})
