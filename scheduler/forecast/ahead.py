"""A job's input history → the :class:`~scheduler.core.model.InputForecast` a round reads.

The fitter (:mod:`.seasonal`) works on one value per minute; a caller whose steps are shorter
(the simulator playing a trace faster than real time: a trace minute every ``step_s``) passes
its steps as minutes and says how long a step lasts, and the forecast keeps that step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from scheduler.core.model import InputForecast
from scheduler.forecast.seasonal import DAY, WEEK, fit

HORIZON_STEPS = 60
"""Steps ahead each forecast covers (an hour of minutes)."""


def forecast_ahead(
    rates: Sequence[float],
    start: datetime,
    *,
    step_s: float = 60.0,
    horizon: int = HORIZON_STEPS,
    quantile: float = 0.9,
) -> InputForecast:
    """The forecast of the ``horizon`` steps from ``start`` of a job whose input per step, oldest
    first and ending just before ``start``, is ``rates`` (NaN where unknown)."""
    fitted = fit(rates, horizon_min=horizon, quantile=quantile)
    return InputForecast(
        start=start,
        mean=fitted.mean,
        upper=fitted.upper,
        naive=seasonal_naive(rates, horizon),
        error=fitted.error,
        step_s=step_s,
        method=fitted.method,
    )


def seasonal_naive(rates: Sequence[float], horizon: int) -> tuple[float, ...]:
    """The input one season before each of the next ``horizon`` steps: a week with over a week
    of history, else a day, else (and where that step is unknown) the last known step."""
    n = len(rates)
    season = WEEK if n >= WEEK else DAY if n >= DAY else 0
    last = next((r for r in reversed(rates) if _known(r)), 0.0)
    values = []
    for k in range(horizon):
        back = n - season + k if season else -1
        value = rates[back] if 0 <= back < n else last
        values.append(value if _known(value) else last)
    return tuple(values)


def _known(value: float) -> bool:
    return math.isfinite(value) and value >= 0.0
