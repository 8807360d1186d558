"""The input-rate forecaster on generated series: accuracy against seasonal-naive, coverage of
its upper quantile, short and gappy histories, and its own error figure when a job changes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from scheduler.forecast import SeriesForecast, fit

DAY = 1440
WEEK = 7 * DAY
HORIZON = 60

Floats = npt.NDArray[np.float64]


def shape(t: npt.NDArray[np.int64], delay_h: float = 0.0) -> Floats:
    """A working-day rate: low nights, a midday peak, weekends at 55 %."""
    hours = ((t % DAY) / 60.0 - delay_h) % 24.0
    day = 0.2 + np.exp(-0.5 * ((hours - 13.0) / 3.5) ** 2)
    weekend = (t // DAY) % 7 >= 5
    return np.asarray(day * np.where(weekend, 0.55, 1.0), dtype=np.float64)


def series(days: int, seed: int = 0, noise: float = 0.15) -> Floats:
    """``days`` of per-minute rates: the weekly shape times multiplicative noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(days * DAY)
    return 100.0 * shape(t) * np.exp(rng.normal(0.0, noise, len(t)))


def origins_in_last(x: Floats, days: int, count: int) -> list[int]:
    last = len(x) - HORIZON
    return [int(o) for o in np.linspace(last - days * DAY, last, count)]


def test_beats_seasonal_naive_on_a_noisy_diurnal_and_weekly_series() -> None:
    x = series(42)
    model, naive = 0.0, 0.0
    for origin in origins_in_last(x, 6, 12):
        result = fit(x[origin - 5 * WEEK : origin])
        actual = x[origin : origin + HORIZON]
        model += float(np.abs(actual - np.array(result.mean)).sum())
        naive += float(np.abs(actual - x[origin - WEEK : origin - WEEK + HORIZON]).sum())
        assert result.method == "weekly-profile"
        assert result.error is not None and result.error < 0.9
    assert model / naive < 0.85


def test_the_upper_quantile_covers_about_its_share() -> None:
    x = series(42, seed=1)
    covered, total = 0, 0
    for origin in origins_in_last(x, 6, 12):
        result = fit(x[origin - 5 * WEEK : origin], quantile=0.9)
        actual = x[origin : origin + HORIZON]
        assert all(u >= m for u, m in zip(result.upper, result.mean, strict=True))
        covered += int((actual <= np.array(result.upper)).sum())
        total += HORIZON
    assert 0.82 <= covered / total <= 0.97


def test_a_higher_quantile_gives_a_higher_bound() -> None:
    history = series(36, seed=2)
    low, high = fit(history, quantile=0.5), fit(history, quantile=0.95)
    assert low.mean == high.mean
    assert sum(high.upper) > sum(low.upper)


def test_less_than_a_day_forecasts_the_recent_level_without_seasonality() -> None:
    rng = np.random.default_rng(3)
    history = 50.0 + rng.normal(0.0, 5.0, 600)
    result = fit(history, horizon_min=30)
    assert result.method == "recent-level"
    assert result.error is None
    assert len(result.mean) == len(result.upper) == 30
    assert len(set(result.mean)) == 1
    assert result.mean[0] == pytest.approx(float(history[-60:].mean()))
    assert result.upper[0] == pytest.approx(float(np.quantile(history[-240:], 0.9)))


def test_a_few_days_use_the_daily_profile_and_backtest_it() -> None:
    x = series(4, seed=4)
    result = fit(x[: 3 * DAY])
    assert result.method == "daily-profile"
    assert result.error is not None and result.error < 1.0
    actual = x[3 * DAY : 3 * DAY + HORIZON]
    assert np.abs(actual - np.array(result.mean)).mean() < 0.2 * actual.mean()


def test_nan_gaps_and_zeros_are_handled() -> None:
    x = series(36, seed=5)
    x[10 * DAY : 12 * DAY] = np.nan  # two days missing
    x[-3 * WEEK : -3 * WEEK + 90] = np.nan  # the same hour three weeks ago
    x[-2 * DAY : -2 * DAY + 40] = 0.0  # a stop of the source
    x[-30:] = np.nan  # the last half hour not in yet
    result = fit(x)
    assert result.method == "weekly-profile"
    assert all(np.isfinite(result.mean)) and all(np.isfinite(result.upper))
    assert result.error is not None and result.error < 1.0
    expected = 100.0 * shape(np.arange(len(x), len(x) + HORIZON))
    assert np.abs(np.array(result.mean) / expected - 1.0).mean() < 0.15


def test_nothing_known_gives_zeros() -> None:
    for history in ([], [np.nan] * 3000, [0.0] * (2 * WEEK)):
        result = fit(history, horizon_min=5)
        assert result.mean == (0.0,) * 5
        assert result.upper == (0.0,) * 5


def test_the_input_is_left_alone_and_the_result_is_repeatable() -> None:
    history = series(15, seed=6)
    before = history.copy()
    first, second = fit(history), fit(history)
    assert isinstance(first, SeriesForecast)
    assert first == second
    assert np.array_equal(history, before)


@pytest.mark.parametrize(("horizon", "quantile"), [(0, 0.9), (DAY + 1, 0.9), (60, 1.0)])
def test_bad_arguments_are_refused(horizon: int, quantile: float) -> None:
    with pytest.raises(ValueError):
        fit(series(2), horizon_min=horizon, quantile=quantile)


def test_after_a_level_shift_the_forecast_follows_the_new_level() -> None:
    """Seasonal-naive keeps last week's level for a week, so the error figure (against it)
    falls rather than rises: the forecast is then worth more than seasonal-naive, not less.
    (It rises when seasonal-naive gets better than the forecast: see the batches test.)"""
    x = series(42, seed=7)
    shift = len(x) - 2 * DAY
    x[shift:] *= 0.4
    before = fit(x[shift - 5 * WEEK : shift])
    forecast, actual = 0.0, 0.0
    for origin in range(len(x) - DAY, len(x) - HORIZON, 3 * 60):
        after = fit(x[origin - 5 * WEEK : origin])
        forecast += sum(after.mean)
        actual += float(x[origin : origin + HORIZON].sum())
    assert forecast == pytest.approx(actual, rel=0.1)
    assert before.error is not None and after.error is not None
    assert after.error < before.error


def test_after_the_pattern_breaks_the_daily_profile_takes_over() -> None:
    """The job's level drops and its peak comes eight hours later: a week later the five-week
    profile is stale, the last seven days are not, and the backtest picks them."""
    x = series(46, seed=8)
    t = np.arange(len(x))
    change = len(x) - 9 * DAY
    rng = np.random.default_rng(9)
    moved = 40.0 * shape(t, delay_h=8.0) * np.exp(rng.normal(0.0, 0.15, len(t)))
    x = np.where(t >= change, moved, x)
    now = fit(x[-5 * WEEK :])
    assert now.method == "daily-profile"
    assert now.error is not None and now.error < 0.9


def test_the_error_rises_above_one_when_seasonal_naive_becomes_better() -> None:
    """The job comes to be fed in sharp hourly batches: last week's exact minute then beats any
    profile smoothed over 21 minutes, and the error says so."""
    x = series(46, seed=10)
    t = np.arange(len(x))
    change = len(x) - 9 * DAY
    rng = np.random.default_rng(11)
    batches = np.where(t % 60 < 12, 300.0, 5.0) * np.exp(rng.normal(0.0, 0.05, len(t)))
    x = np.where(t >= change, batches, x)
    before = fit(x[change - 5 * WEEK : change])
    now = fit(x[-5 * WEEK :])
    assert before.error is not None and before.error < 0.9
    assert now.error is not None and now.error > 1.0
