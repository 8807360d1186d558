"""A job's options (``henge``'s models as a plan): what each executor count would give it now and
at its forecast's peak, the smallest counts that meet its SLO, and no numbers from a model the
policy would not trust."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler.core.model import InputForecast, JobView
from scheduler.core.policies.henge.model import JobModel, predicted_utility
from scheduler.core.policies.henge.options import job_options
from scheduler.core.policies.henge.product_settings import ProductSettings
from scheduler.core.slo import SLO, meets_slo

from .henge_builders import at, job

MODEL = JobModel(row_cost_s=0.002, overhead_s=0.4, trigger_s=1.0, windows=12, last_report=None)
"""2 ms of one core a row, 0.4 s a batch, a batch a second: 1,000 rows/s need 2 cores to keep
up and more to meet a tight latency."""
SETTINGS = ProductSettings()


def latency_job(**overrides: object) -> JobView:
    values: dict[str, object] = {
        "priority": 35.0,
        "executors": 5,
        "min_executors": 1,
        "max_executors": 16,
        "input_rate": 1000.0,
        "slo": SLO(latency_ms=1500.0),
    }
    values.update(overrides)
    return job("gold", **values)  # type: ignore[arg-type]


def meets(view: JobView, executors: int, rate: float) -> bool:
    return meets_slo(predicted_utility(MODEL, view, executors, rate), view.priority)


def peak_forecast(peak: float, peak_minute: int) -> InputForecast:
    """An hour of minutes from ``at(0)``: 1,000 rows/s, its upper quantile ``peak`` at one."""
    mean = (1000.0,) * 60
    upper = tuple(peak if k == peak_minute else 1100.0 for k in range(60))
    return InputForecast(at(0), mean, upper, naive=mean, error=0.5)


def test_every_count_is_predicted_and_the_smallest_meeting_the_slo_is_marked() -> None:
    view = latency_job()
    found = job_options(view, MODEL, 0.02, SETTINGS, at(30))
    assert found.trusted and found.input_rate == 1000.0 and found.held == 5
    assert [o.executors for o in found.options] == list(range(1, 17))
    for option in found.options:
        n = option.executors
        assert option.now.utility == pytest.approx(predicted_utility(MODEL, view, n, 1000.0))
        assert option.now.meets_slo == meets(view, n, 1000.0)
        assert option.core_hours_per_day == n * 24.0
        assert option.peak is None  # no forecast
    marked = found.meets_now
    assert marked is not None and 1 < marked < 16
    assert meets(view, marked, 1000.0) and not meets(view, marked - 1, 1000.0)
    # One executor takes 500 rows/s: the input outruns it, and its latency is unbounded.
    first = found.options[0].now
    assert first.latency_ms is None and first.juice == pytest.approx(0.5)
    assert found.peak is None and found.meets_peak is None


def test_the_forecast_peak_needs_more_and_is_marked_too() -> None:
    view = replace(latency_job(), forecast=peak_forecast(2500.0, peak_minute=40))
    found = job_options(view, MODEL, 0.02, SETTINGS, at(30), forecast_trusted=True)
    assert found.peak is not None
    assert found.peak.rate == 2500.0 and found.peak.at == at(40 * 60) and found.peak.trusted
    assert found.meets_now is not None and found.meets_peak is not None
    assert found.meets_peak > found.meets_now
    n = found.meets_peak
    assert meets(view, n, 2500.0) and meets(view, n, 1000.0) and not meets(view, n - 1, 2500.0)
    at_peak = {o.executors: o.peak for o in found.options}
    assert at_peak[n] is not None and at_peak[n].meets_slo
    assert at_peak[n - 1] is not None and not at_peak[n - 1].meets_slo


def test_a_peak_past_the_forecast_is_not_looked_for() -> None:
    view = replace(latency_job(), forecast=peak_forecast(2500.0, peak_minute=10))
    assert job_options(view, MODEL, 0.02, SETTINGS, at(3 * 3600)).peak is None
    # From minute 20 on, the minute-10 peak is behind: the highest ahead is the rest's 1,100.
    later = job_options(view, MODEL, 0.02, SETTINGS, at(20 * 60))
    assert later.peak is not None and later.peak.rate == 1100.0


@pytest.mark.parametrize(
    ("model", "error", "view", "reason"),
    [
        (None, None, latency_job(), "no model yet"),
        (MODEL._replace(windows=2), None, latency_job(), "learned from 2 windows"),
        (MODEL, 0.4, latency_job(), "recent error, 0.400 of the priority"),
        (MODEL._replace(overhead_s=None), None, latency_job(), "no batch timings yet"),
        (MODEL, None, latency_job(input_rate=0.0), "no input measured"),
    ],
    ids=["no-model", "few-windows", "error", "no-timings", "no-input"],
)
def test_a_model_the_policy_would_not_trust_gives_a_reason_and_no_numbers(
    model: JobModel | None, error: float | None, view: JobView, reason: str
) -> None:
    found = job_options(view, model, error, SETTINGS, at(30))
    assert not found.trusted and reason in found.reason
    assert found.options == () and found.meets_now is None and found.meets_peak is None


def test_a_wide_range_lists_a_readable_spread_with_the_counts_that_matter() -> None:
    view = latency_job(max_executors=200, executors=37)
    found = job_options(view, MODEL, 0.02, SETTINGS, at(30), rows=10)
    counts = [o.executors for o in found.options]
    assert counts == sorted(set(counts)) and len(counts) <= 10 + 3
    assert counts[0] == 1 and counts[-1] == 200 and 37 in counts
    assert found.meets_now in counts
