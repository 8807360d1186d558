"""The capacity plan (``henge``'s models over the time ahead): the cores each job's SLO needs at
each point, per priority tier, and which tiers and jobs miss when the cores do not hold them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler.core.model import InputForecast, JobView
from scheduler.core.policies.henge.capacity_plan import capacity_plan
from scheduler.core.policies.henge.model import JobModel, meets_at
from scheduler.core.policies.henge.product_settings import ProductSettings
from scheduler.core.slo import SLO

from .henge_builders import at, job

MODEL = JobModel(row_cost_s=0.002, overhead_s=0.4, trigger_s=1.0, windows=12, last_report=None)
"""2 ms of one core a row, 0.4 s a batch, a batch a second."""
SETTINGS = ProductSettings()


def latency_job(name: str, priority: float, rate: float = 1000.0, **overrides: object) -> JobView:
    values: dict[str, object] = {
        "priority": priority,
        "executors": 5,
        "min_executors": 1,
        "max_executors": 32,
        "input_rate": rate,
        "slo": SLO(latency_ms=1500.0),
    }
    values.update(overrides)
    return job(name, **values)  # type: ignore[arg-type]


def need(view: JobView, rate: float) -> int:
    """The smallest count the model says meets the SLO at ``rate`` (what the plan must find)."""
    return next(n for n in range(view.min_executors, 33) if meets_at(MODEL, view, n, rate))


def rising(low: float, high: float, from_minute: int) -> InputForecast:
    """An hour of minutes from ``at(0)``: the upper quantile ``low`` then ``high``."""
    upper = tuple(high if k >= from_minute else low for k in range(60))
    return InputForecast(at(0), upper, upper, naive=upper, error=0.5)


def plan(jobs: list[JobView], cores: float, trusted: bool = True, **kwargs: object):  # type: ignore[no-untyped-def]
    return capacity_plan(
        jobs,
        {j.job_id: MODEL for j in jobs},
        {j.job_id: 0.01 for j in jobs},
        {j.job_id: trusted for j in jobs},
        SETTINGS,
        at(0),
        cores,
        **kwargs,  # type: ignore[arg-type]
    )


def test_each_job_needs_the_smallest_count_that_meets_its_slo_at_its_forecast() -> None:
    view = replace(latency_job("gold", 90.0), forecast=rising(1000.0, 2500.0, from_minute=40))
    found = plan([view], cores=64.0)
    assert found.step_s == 60.0 and found.points == 60
    (needs,) = found.jobs
    assert needs.sized and needs.forecast and needs.note == ""
    assert needs.executors[0] == need(view, 1000.0) < needs.executors[40] == need(view, 2500.0)
    assert found.tightest == 40 and found.at(40) == at(2400)
    assert found.peak_cores == need(view, 2500.0)
    assert found.first_dropped is None and all(t.fits for t in found.tiers)


def test_an_untrusted_forecast_holds_the_input_now() -> None:
    view = replace(latency_job("gold", 90.0), forecast=rising(1000.0, 2500.0, from_minute=40))
    (needs,) = plan([view], cores=64.0, trusted=False).jobs
    assert not needs.forecast and set(needs.executors) == {need(view, 1000.0)}


def test_a_job_without_a_trusted_model_counts_at_what_it_holds_and_says_why() -> None:
    view = latency_job("new", 50.0, executors=7)
    found = capacity_plan([view], {}, {}, {}, SETTINGS, at(0), 64.0)
    (needs,) = found.jobs
    assert not needs.sized and "no model yet" in needs.note
    assert set(needs.executors) == {7} and found.peak_cores == 7


def test_a_job_out_of_its_ranges_reach_counts_at_its_most_and_says_so() -> None:
    view = latency_job("huge", 50.0, rate=1e6, max_executors=8)
    (needs,) = plan([view], cores=64.0).jobs
    assert set(needs.executors) == {8} and "no count up to 8" in needs.note


def test_the_lower_tier_gives_way_first_and_is_named_with_its_shortfall() -> None:
    gold = latency_job("gold", 90.0, rate=3000.0)
    silver = latency_job("silver", 50.0, rate=3000.0, cores=2)
    bronze = [latency_job(f"bronze-{k}", 10.0, rate=2000.0) for k in range(2)]
    jobs = [gold, silver, *bronze]
    needed = {j.job_id: need(j, 3000.0 if j.priority > 10 else 2000.0) for j in jobs}
    cores = {j.job_id: needed[j.job_id] * j.cores_per_executor for j in jobs}
    total = sum(cores.values())
    assert plan(jobs, cores=float(total)).first_dropped is None

    # One core short: one bronze job misses, by what it needs beyond its minimum.
    short = plan(jobs, cores=float(total - 1))
    gold_tier, silver_tier, bronze_tier = short.tiers
    assert [t.priority for t in short.tiers] == [90.0, 50.0, 10.0]
    assert gold_tier.fits and silver_tier.fits and not bronze_tier.fits
    assert short.first_dropped is bronze_tier and len(bronze_tier.missing) == 1
    assert bronze_tier.short_cores == cores["bronze-0"] - 1  # (its minimum is one core)
    assert bronze_tier.short_at == at(0)

    # Without room for silver beyond the minimums, silver and bronze miss; gold still fits.
    minimums = 1 + 2 + 1 + 1
    squeezed = plan(jobs, cores=float(minimums + cores["gold"] - 1 + 1))
    assert squeezed.tiers[0].fits
    assert not squeezed.tiers[1].fits and squeezed.tiers[1].missing == ("silver",)
    assert squeezed.first_dropped is squeezed.tiers[2]


def test_when_even_the_minimums_do_not_fit_the_lower_tiers_lose_theirs_first() -> None:
    gold = latency_job("gold", 90.0, min_executors=4)
    bronze = latency_job("bronze", 10.0, min_executors=4, rate=100.0)
    found = plan([gold, bronze], cores=float(need(gold, 1000.0)))
    gold_tier, bronze_tier = found.tiers
    assert gold_tier.fits
    # Bronze's minimum finds no room: it lacks all it needs (its minimum, at that input).
    assert bronze_tier.missing == ("bronze",) and bronze_tier.short_cores == 4
    assert found.first_dropped is bronze_tier


def test_tier_sums_and_the_total_add_up_at_every_point() -> None:
    views = [
        replace(latency_job("a", 90.0), forecast=rising(800.0, 1800.0, from_minute=10)),
        replace(latency_job("b", 90.0), forecast=rising(1500.0, 600.0, from_minute=30)),
        latency_job("c", 10.0, cores=2),
    ]
    found = plan(views, cores=100.0)
    for k in range(found.points):
        per_job = sum(n.cores(k) for n in found.jobs)
        assert found.total[k] == per_job == sum(t.cores[k] for t in found.tiers)
    assert found.peak_cores == max(found.total)


def test_a_long_horizon_gets_wider_points_valued_at_their_highest_input() -> None:
    upper = tuple(3000.0 if k == 7 else 1000.0 for k in range(600))
    forecast = InputForecast(at(0), upper, upper, naive=upper, error=0.5)
    view = replace(latency_job("gold", 90.0), forecast=forecast)
    found = plan([view], cores=64.0, horizon_s=36000.0)
    assert found.points == 240 and found.step_s == 150.0
    # Minute 7 (420-480 s) overlaps the third point (300-450 s) and the fourth (450-600 s).
    counts = found.jobs[0].executors
    assert counts[2] == counts[3] == need(view, 3000.0)
    assert counts[1] == counts[4] == need(view, 1000.0) < need(view, 3000.0)
    with pytest.raises(ValueError, match="horizon_s"):
        plan([view], cores=64.0, horizon_s=0.0)
