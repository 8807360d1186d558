"""Proactive sizing from input forecasts (``henge``'s ``proactive``): a trusted forecast's rise is
met before it comes, and a distrusted one leaves the reactive rules in charge."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from scheduler.core.model import ActionKind, InputForecast, JobView
from scheduler.core.policies.henge.product import HengeProductPolicy
from scheduler.core.policies.henge.product_settings import ProductSettings
from scheduler.core.policies.henge.product_state import ProductState, dump, load

from .henge_builders import at
from .test_henge_product import decide, fitted, streaming, targets


def rising_forecast(
    *, now: float = 0.0, rise_in_s: float = 60.0, error: float | None = 0.5
) -> InputForecast:
    """An hour of minutes from ``now``: 2000 rows/s, then 4000 from ``rise_in_s`` on."""
    steps = 60
    mean = tuple(2000.0 if 60.0 * k < rise_in_s else 4000.0 for k in range(steps))
    upper = tuple(1.1 * v for v in mean)
    return InputForecast(at(now), mean, upper, naive=(1000.0,) * steps, error=error)


def proactive(on: bool = True) -> HengeProductPolicy:
    return HengeProductPolicy(ProductSettings(proactive=on))


def with_forecast(view: JobView, forecast: InputForecast | None) -> JobView:
    return replace(view, forecast=forecast)


def test_the_forecast_steps_and_their_highest_upper_quantile() -> None:
    forecast = rising_forecast(rise_in_s=180.0)
    assert forecast.index(at(-1)) is None and forecast.index(at(3600)) is None
    assert forecast.index(at(0)) == 0 and forecast.index(at(119.9)) == 1
    assert forecast.highest_upper(at(0), 120.0) == pytest.approx(2200.0)
    assert forecast.highest_upper(at(0), 180.0) == pytest.approx(4400.0)
    assert forecast.highest_upper(at(4000), 60.0) is None
    assert forecast.highest_mean(at(0), 120.0) == 2000.0
    assert forecast.highest_mean(at(60), 3600.0) == 4000.0  # (as far as it reaches)


@pytest.mark.parametrize("on", [True, False])
def test_a_predicted_rise_is_met_before_it_comes(on: bool) -> None:
    # Meets its SLO now at 2000 rows/s on 8 executors; the forecast sees 4000 within two minutes,
    # which needs 13: grown now, while it still meets its SLO.
    job = with_forecast(streaming("a", 8, 2000.0, priority=50.0), rising_forecast())
    assert job.utility == job.priority
    state = ProductState(models=fitted([job]))
    plan, _ = decide(proactive(on), [job], state, 0)
    if not on:
        assert plan.action is ActionKind.NONE
        return
    assert plan.action is ActionKind.RECONFIGURE and targets(plan)["a"] >= 13


def test_a_rise_beyond_the_time_a_move_takes_waits() -> None:
    # The rise is 50 minutes away: a move now would hold executors idle for most of an hour.
    job = with_forecast(streaming("a", 8, 2000.0, priority=50.0), rising_forecast(rise_in_s=3000))
    plan, _ = decide(proactive(), [job], ProductState(models=fitted([job])), 0)
    assert plan.action is ActionKind.NONE


@pytest.mark.parametrize(
    ("error", "online"),
    [(1.2, None), (0.5, (900.0, 300.0))],
    ids=["fitter-backtest-worse-than-seasonal-naive", "worse-on-the-input-since"],
)
def test_a_distrusted_forecast_falls_back_to_the_reactive_rule(
    error: float, online: tuple[float, float] | None
) -> None:
    job = with_forecast(streaming("a", 8, 2000.0, priority=50.0), rising_forecast(error=error))
    errors = {"a": online} if online is not None else {}
    state = ProductState(models=fitted([job]), forecast_errors=errors)
    plan, after = decide(proactive(), [job], state, 0)
    assert plan.action is ActionKind.NONE  # as without a forecast: it meets its SLO now
    if online is not None:  # (the error with the input now is folded in)
        assert after.forecast_errors["a"][0] > after.forecast_errors["a"][1]


def test_the_forecast_error_on_the_measured_input_is_a_moving_average() -> None:
    forecast = rising_forecast(error=0.5)  # mean 2000 now, seasonal-naive 1000
    job = with_forecast(streaming("a", 8, 2100.0, priority=50.0), forecast)
    _, state = decide(proactive(), [job], ProductState(models=fitted([job])), 0)
    assert state.forecast_errors["a"] == pytest.approx((100.0, 1100.0))
    later = with_forecast(streaming("a", 8, 1900.0, priority=50.0), forecast)
    _, state = decide(proactive(), [later], state, 10)
    assert state.forecast_errors["a"] == pytest.approx((100.0, 1100.0 + 0.3 * (900.0 - 1100.0)))
    assert load(dump(state)).forecast_errors == state.forecast_errors


def test_no_give_back_before_a_rise_the_forecast_sees_coming() -> None:
    # 20 executors at 2000 rows/s (7 would do) for over an hour: given back without a forecast,
    # kept when the forecast sees 4000 rows/s within the hour.
    since = {"a": at(-4000).timestamp()}
    peaks = {"a": (2000.0, at(-10).timestamp())}
    for forecast, kept in ((None, False), (rising_forecast(rise_in_s=1800), True)):
        job = with_forecast(streaming("a", 20, 2000.0, priority=50.0), forecast)
        state = ProductState(models=fitted([job]), surplus_since=since, peaks=peaks)
        plan, _ = decide(proactive(), [job], state, 0)
        assert (plan.action is ActionKind.NONE) is kept, plan.reason
        if not kept:
            assert "give back" in plan.reason and targets(plan)["a"] < 20


def test_a_forecast_that_no_longer_covers_now_is_ignored() -> None:
    stale = replace(rising_forecast(), start=at(0) - timedelta(hours=2))
    job = with_forecast(streaming("a", 8, 2000.0, priority=50.0), stale)
    plan, _ = decide(proactive(), [job], ProductState(models=fitted([job])), 0)
    assert plan.action is ActionKind.NONE
