"""A seasonal-profile forecaster of a job's input rate, in numpy alone.

The next hour of a streaming job's input mostly looks like the same hour of past days or weeks,
at the level the job has had in its last hour. So the forecast of minute ``t`` is

* a **profile**: the mean, over past cycles, of the rates in a 21-minute window centred on the
  same minute of the cycle. Averaging a hundred or more past minutes takes out most of the
  minute-to-minute noise that makes seasonal-naive (last week's single minute) a poor forecast.
  Two profiles are tried: *weekly* (the same minute of the week over up to five weeks) and
  *daily* (the same minute of the day over the last seven days);
* times the **level ratio**: the rate of the last hour over the profile of that same hour, so a
  job that runs 30 % above its usual level (or a Sunday at half a weekday's) is forecast 30 %
  above its profile (or at half of it).

Both profiles are backtested from hourly origins over the last week of the history, each origin
using only what was known then; the one with the smaller mean absolute error is used. The daily
one usually wins (seven recent days, reshaped by the level ratio, are less noisy and more recent
than five weeks); the weekly one wins when weekends have a shape of their own. The upper quantile
at each lead is the chosen profile's quantile of relative errors in that backtest, and
:attr:`SeriesForecast.error` its recent MASE against seasonal-naive, so that a caller can tell
when the forecast is no better than last week's value.

With less than a day (plus an hour) of history there is no seasonality to use: the forecast is
flat at the mean of the last hour, and the upper bound is the quantile of the last four hours'
minutes. Missing minutes are NaN and are left out of every mean; zeros are data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

DAY: Final = 1440
WEEK: Final = 7 * DAY
HALF_WINDOW: Final = 10
"""The profile window is the same minute of the cycle ±10 minutes: 21 minutes of past data per
cycle, enough to average noise away and short enough to keep a morning ramp's shape."""
RECENT_MIN: Final = 60
"""The level ratio is taken over the last hour: long enough not to chase one burst, short
enough to follow a job whose input has just moved."""
SHORT_SPREAD_MIN: Final = 240
"""Without seasonality, the upper bound is a quantile of the last four hours' minutes."""
BACKTEST_STEP: Final = 60
BACKTEST_ORIGINS: Final = 168
"""Hourly origins over the last week: 168 errors per lead for the quantile."""
ERROR_ORIGINS: Final = 24
"""The reported error uses the last day of origins, so that it moves when the pattern breaks."""
LEAD_POOL: Final = 2
"""The quantile at lead h pools the errors at leads h-2..h+2, steadier than one lead alone."""
MIN_ERRORS: Final = 20
MAX_HORIZON: Final = DAY
"""Beyond a day ahead the last hour's level says little; the profile alone would do."""
CHUNK: Final = 24
"""Backtest origins forecast together: bounds the memory of the gathered windows."""
RATIO_BOUNDS: Final = (0.1, 10.0)
FLOOR_SHARE: Final = 0.02
"""A fiftieth of the series' mean rate is added to both sides of the level ratio and to the
scale of relative errors, so that near-zero minutes (a quiet night) cannot blow them up."""


@dataclass(frozen=True)
class SeriesForecast:
    """The forecast of one job's input rate for each minute ahead (index 0: the next minute).

    ``error`` is the mean absolute error of this method over the recent backtest divided by that
    of seasonal-naive (same minute last week, or yesterday with under eight days of history) over
    the same minutes: below 1 the forecast beats seasonal-naive; ``None`` when the history is too
    short to backtest.
    """

    mean: tuple[float, ...]
    upper: tuple[float, ...]
    quantile: float
    method: str
    error: float | None


@dataclass(frozen=True)
class _Profile:
    """A seasonal profile: the mean over the last ``cycles`` periods at the same phase."""

    name: str
    period: int
    cycles: int


WEEKLY: Final = _Profile("weekly-profile", WEEK, 5)
"""Five weeks: older ones describe an older job."""
DAILY: Final = _Profile("daily-profile", DAY, 7)
"""A week of days: every weekday once, the level ratio rescaling each to the day at hand."""
KEPT_MIN: Final = WEEKLY.cycles * WEEK + DAY
"""The history used: five weeks for the profile of the last backtest day plus that day."""


@dataclass(frozen=True)
class _Backtest:
    """Per backtest origin (rows, oldest first) and lead (columns): the forecast's error
    relative to its mean, and the absolute errors of the forecast and of seasonal-naive. NaN
    where the actual (or, for seasonal-naive, last period's value) is missing."""

    relative: Floats
    model_abs: Floats
    naive_abs: Floats

    def mean_abs(self) -> float:
        """The mean absolute error over the known minutes; infinite without any."""
        known = self.model_abs[np.isfinite(self.model_abs)]
        return float(known.mean()) if known.size else float("inf")

    def recent(self, origins: int) -> _Backtest:
        """The same over the last ``origins`` origins only."""
        return _Backtest(
            relative=self.relative[-origins:],
            model_abs=self.model_abs[-origins:],
            naive_abs=self.naive_abs[-origins:],
        )


def fit(rates: npt.ArrayLike, *, horizon_min: int = 60, quantile: float = 0.9) -> SeriesForecast:
    """Forecast the ``horizon_min`` minutes after the last of ``rates`` (one value per minute,
    oldest first, NaN where missing), with the mean and the ``quantile`` upper bound per minute.

    The result's ``method`` is ``weekly-profile`` or ``daily-profile`` (whichever backtested
    better), or ``recent-level`` with under a day and an hour of history, where there is no
    seasonality to use and no ``error``.
    """
    if not 1 <= horizon_min <= MAX_HORIZON:
        raise ValueError(f"horizon_min must be in 1..{MAX_HORIZON}, not {horizon_min}")
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must be in (0, 1), not {quantile}")
    x = _clean(rates)
    profiles = _profiles(len(x))
    if not profiles:
        return _recent_level(x, horizon_min, quantile)
    floor = _floor(x)
    reference = profiles[0].period
    origins = _backtest_origins(len(x), horizon_min, reference)
    tests = [_backtest(x, origins, horizon_min, p, reference, floor) for p in profiles]
    best = min(range(len(profiles)), key=lambda i: tests[i].mean_abs())
    profile, backtest = profiles[best], tests[best]
    mean = _forecast(x, np.array([len(x)]), horizon_min, profile, floor)[0]
    upper = _upper(x, mean, backtest.relative, quantile, floor)
    return SeriesForecast(
        mean=_as_tuple(mean),
        upper=_as_tuple(np.maximum(upper, mean)),
        quantile=quantile,
        method=profile.name,
        error=_mase(backtest.recent(ERROR_ORIGINS)),
    )


def _clean(rates: npt.ArrayLike) -> Floats:
    """The history as floats, its last :data:`KEPT_MIN` minutes; negative and infinite values,
    which no rate can have, count as missing."""
    x = np.asarray(rates, dtype=np.float64).ravel()[-KEPT_MIN:]
    return np.where(np.isfinite(x) & (x >= 0.0), x, np.nan)


def _profiles(n: int) -> list[_Profile]:
    """The profiles that ``n`` minutes of history allow, longest period first: weekly needs a
    week plus a day to backtest, daily a day plus the hour the level ratio looks at."""
    allowed = [(WEEKLY, WEEK + DAY), (DAILY, DAY + RECENT_MIN)]
    return [profile for profile, needs in allowed if n >= needs]


def _floor(x: Floats) -> float:
    """A share of the mean rate, added where a ratio or a relative error could divide by a rate
    near zero."""
    finite = x[np.isfinite(x)]
    scale = float(finite.mean()) if finite.size else 0.0
    return max(FLOOR_SHARE * scale, 1e-9)


def _recent_level(x: Floats, horizon: int, quantile: float) -> SeriesForecast:
    """No seasonality: flat at the mean of the last hour, the upper bound at the quantile of the
    last four hours (both 0 if nothing was seen)."""
    recent = x[-RECENT_MIN:]
    spread = x[-SHORT_SPREAD_MIN:]
    level = _nanmean(recent) if np.isfinite(recent).any() else _nanmean(x)
    level = level if np.isfinite(level) else 0.0
    top = float(np.nanquantile(spread, quantile)) if np.isfinite(spread).any() else level
    return SeriesForecast(
        mean=(level,) * horizon,
        upper=(max(level, top),) * horizon,
        quantile=quantile,
        method="recent-level",
        error=None,
    )


def _forecast(x: Floats, origins: Ints, horizon: int, profile: _Profile, floor: float) -> Floats:
    """The mean forecast from each origin (the first minute not known), shape (origins, horizon):
    the profile at each lead times the level ratio of the hour before the origin."""
    leads = np.arange(horizon)
    targets = origins[:, None] + leads[None, :]
    limits = np.broadcast_to(origins[:, None], targets.shape)
    shape = _profile(x, targets, limits, profile)
    ratio = _level_ratio(x, origins, profile, floor)
    mean = shape * ratio[:, None]
    fallback = _recent_means(x, origins)
    return np.where(np.isfinite(mean), mean, fallback[:, None])


def _profile(x: Floats, targets: Ints, limits: Ints, profile: _Profile) -> Floats:
    """The seasonal profile at each target minute from the data before its limit: per past
    cycle the mean of the window around the same phase, then the mean over cycles."""
    window = np.arange(-HALF_WINDOW, HALF_WINDOW + 1)
    cycles = np.arange(1, profile.cycles + 1)
    lags = cycles[:, None] * profile.period - window[None, :]
    idx = targets[..., None, None] - lags
    seen = (idx >= 0) & (idx < limits[..., None, None])
    values = np.where(seen, x[np.clip(idx, 0, len(x) - 1)], np.nan)
    per_cycle = _nanmean_axis(values, axis=-1)
    return _nanmean_axis(per_cycle, axis=-1)


def _level_ratio(x: Floats, origins: Ints, profile: _Profile, floor: float) -> Floats:
    """The last hour's rate over its profile, per origin, counting only minutes where both are
    known; 1 when the last hour is missing, bounded so that one odd hour cannot run away."""
    recent = origins[:, None] - RECENT_MIN + np.arange(RECENT_MIN)[None, :]
    limits = np.broadcast_to(origins[:, None], recent.shape)
    shape = _profile(x, recent, limits, profile)
    actual = np.where(recent >= 0, x[np.clip(recent, 0, len(x) - 1)], np.nan)
    both = np.isfinite(shape) & np.isfinite(actual)
    count = both.sum(axis=1)
    top = np.where(both, actual, 0.0).sum(axis=1) + floor * count
    bottom = np.where(both, shape, 0.0).sum(axis=1) + floor * count
    ratio = np.where(count > 0, top / np.maximum(bottom, 1e-12), 1.0)
    return np.clip(ratio, *RATIO_BOUNDS)


def _recent_means(x: Floats, origins: Ints) -> Floats:
    """The mean of the hour before each origin (0 when unknown): the forecast where no profile
    exists (e.g. every past week missing at that minute)."""
    recent = origins[:, None] - RECENT_MIN + np.arange(RECENT_MIN)[None, :]
    actual = np.where(recent >= 0, x[np.clip(recent, 0, len(x) - 1)], np.nan)
    means = _nanmean_axis(actual, axis=1)
    return np.where(np.isfinite(means), means, 0.0)


def _backtest(
    x: Floats, origins: Ints, horizon: int, profile: _Profile, reference: int, floor: float
) -> _Backtest:
    """The forecast and seasonal-naive (the value ``reference`` minutes earlier) against what
    came, from each backtest origin, using only the minutes before it."""
    if origins.size == 0:
        empty = np.empty((0, horizon))
        return _Backtest(relative=empty, model_abs=empty, naive_abs=empty)
    chunks = [origins[i : i + CHUNK] for i in range(0, len(origins), CHUNK)]
    mean = np.concatenate([_forecast(x, c, horizon, profile, floor) for c in chunks])
    targets = origins[:, None] + np.arange(horizon)[None, :]
    actual = x[targets]
    return _Backtest(
        relative=(actual - mean) / (mean + floor),
        model_abs=np.abs(actual - mean),
        naive_abs=np.abs(actual - x[targets - reference]),
    )


def _backtest_origins(n: int, horizon: int, period: int) -> Ints:
    """Hourly origins over the last week whose forecast ends by the last minute and which have
    a full (longest) period and the level-ratio hour behind them, oldest first."""
    last = n - horizon
    first = max(period + RECENT_MIN, last - (BACKTEST_ORIGINS - 1) * BACKTEST_STEP)
    if last < first:
        return np.empty(0, dtype=np.int64)
    return np.arange(last, first - 1, -BACKTEST_STEP, dtype=np.int64)[::-1]


def _upper(x: Floats, mean: Floats, relative: Floats, quantile: float, floor: float) -> Floats:
    """The upper bound per lead from the quantile of past relative errors at that lead (leads
    pooled nearby); the recent spread when the backtest has too few errors."""
    horizon = len(mean)
    scale = mean + floor
    if np.isfinite(relative).sum() < MIN_ERRORS:
        recent = x[-SHORT_SPREAD_MIN:]
        level = _nanmean(recent)
        top = np.nanquantile(recent, quantile) if np.isfinite(recent).any() else np.nan
        spread = top / level - 1.0 if level > 0 and np.isfinite(top) else 0.0
        return mean + max(float(spread), 0.0) * scale
    q = np.empty(horizon)
    for lead in range(horizon):
        pooled = relative[:, max(0, lead - LEAD_POOL) : lead + LEAD_POOL + 1]
        finite = pooled[np.isfinite(pooled)]
        if finite.size < MIN_ERRORS:
            finite = relative[np.isfinite(relative)]
        q[lead] = np.quantile(finite, quantile)
    return mean + np.maximum(q, 0.0) * scale


def _mase(backtest: _Backtest) -> float | None:
    """Mean absolute error of the forecast over that of seasonal-naive on the minutes where
    the actual and last period's value are both known; None without such minutes."""
    both = np.isfinite(backtest.model_abs) & np.isfinite(backtest.naive_abs)
    naive = float(backtest.naive_abs[both].sum())
    if not both.any() or naive <= 0.0:
        return None
    return float(backtest.model_abs[both].sum()) / naive


def _nanmean_axis(values: Floats, axis: int) -> Floats:
    """Mean over ``axis`` ignoring NaN; NaN (without a warning) where all are NaN."""
    finite = np.isfinite(values)
    count = finite.sum(axis=axis)
    total = np.where(finite, values, 0.0).sum(axis=axis)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _nanmean(values: Floats) -> float:
    """Mean ignoring NaN; NaN if there is nothing."""
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else float("nan")


def _as_tuple(values: Floats) -> tuple[float, ...]:
    return tuple(float(max(v, 0.0)) for v in values)
