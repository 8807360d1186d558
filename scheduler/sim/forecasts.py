"""The simulator's input forecasts: each job's recorded input (``history_days`` before the start,
then what arrived) fitted as the service's forecaster fits it, once per hour of steps.

A job whose trace plays faster than real time is fitted per trace minute, so its days and weeks
are the trace's; its forecast's steps last what a trace minute lasts in the simulation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from scheduler.core.model import InputForecast
from scheduler.forecast.ahead import HORIZON_STEPS, forecast_ahead

REFIT_STEPS = 60
"""Steps between two fits of a job's forecast (an hour of minutes)."""


class InputHistory(Protocol):
    start: datetime

    def input_history(self, job: str, days: float, now: datetime) -> tuple[float, list[float]]:
        """``(step_s, rates)``: the job's input per step up to the last whole step before
        ``now``, from ``days`` before the start."""
        ...


@dataclass
class SimForecasts:
    """A forecast source (:class:`~scheduler.round.forecasts.ForecastSource`) over a world."""

    world: InputHistory
    names: Mapping[str, str]
    """Job id → job name in the world."""
    history_days: float
    fitted: dict[str, InputForecast] = field(default_factory=dict)
    """Per job id: its latest forecast."""

    def latest(self, job_ids: Sequence[str], now: datetime) -> Mapping[str, InputForecast]:
        forecasts: dict[str, InputForecast] = {}
        for job_id in job_ids:
            name = self.names.get(job_id)
            if name is None:
                continue
            old = self.fitted.get(job_id)
            if old is None or self._stale(old, now):
                self.fitted[job_id] = self._fit(name, now)
            forecasts[job_id] = self.fitted[job_id]
        return forecasts

    def _stale(self, forecast: InputForecast, now: datetime) -> bool:
        age = (now - forecast.start).total_seconds()
        return age >= min(REFIT_STEPS, HORIZON_STEPS - 1) * forecast.step_s

    def _fit(self, name: str, now: datetime) -> InputForecast:
        step, rates = self.world.input_history(name, self.history_days, now)
        elapsed = len(rates) - round(self.history_days * 1440)
        start = self.world.start + timedelta(seconds=elapsed * step)
        return forecast_ahead(rates, start, step_s=step)
