"""Each job's latest input forecast: fitted from its minutes (:mod:`.history`) outside the rounds
(the service on a schedule, ``henge forecast fit``), a row per job in ``input_forecasts``, and
read by every round (DESIGN §8).

A job's series is its arrived rate per whole minute over the last ``days`` (NaN for a minute no
report window covered), on the clock of its agent; its forecast starts at the minute after the
last one recorded.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from scheduler.core.model import InputForecast
from scheduler.forecast.ahead import forecast_ahead
from scheduler.registry.history import MINUTE, input_minutes
from scheduler.registry.tables import InputForecastRow, Job
from scheduler.spark.forecasts import fit_on_spark

MIN_MINUTES = 60
"""Minutes of history a job needs before it is forecast."""


@dataclass(frozen=True)
class MinuteSeries:
    """A job's arrived rate per minute from ``start``, NaN where no window covered it."""

    start: datetime
    rates: list[float]

    @property
    def end(self) -> datetime:
        """The minute after the last one."""
        return self.start + len(self.rates) * MINUTE


def minute_series(
    session: Session, job_id: str, until: datetime, days: float
) -> MinuteSeries | None:
    """The job's whole minutes before ``until`` over the last ``days`` (``None``: none)."""
    last = until.replace(second=0, microsecond=0)
    minutes = input_minutes(session, job_id, last - timedelta(days=days), last)
    if not minutes:
        return None
    start = minutes[0].minute
    rates = [math.nan] * (int((minutes[-1].minute - start) / MINUTE) + 1)
    for minute in minutes:
        rates[int((minute.minute - start) / MINUTE)] = minute.arrived_rate
    return MinuteSeries(start, rates)


def fit_series(series: MinuteSeries) -> InputForecast:
    return forecast_ahead(series.rates, series.end)


def _pack(values: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _unpack(data: bytes) -> tuple[float, ...]:
    return struct.unpack(f"<{len(data) // 4}f", data)


def store_forecast(
    session: Session, job_id: str, forecast: InputForecast, fitted_at: datetime
) -> None:
    """Replace the job's forecast with ``forecast``."""
    row = session.get(InputForecastRow, job_id)
    if row is None:
        row = InputForecastRow(job_id=job_id)
        session.add(row)
    row.fitted_at = fitted_at
    row.start = forecast.start
    row.step_s = forecast.step_s
    row.mean = _pack(forecast.mean)
    row.upper = _pack(forecast.upper)
    row.naive = _pack(forecast.naive)
    row.error = forecast.error
    row.method = forecast.method[:32]


def latest_forecasts(session: Session, job_ids: Iterable[str]) -> dict[str, InputForecast]:
    """The stored forecast of each of ``job_ids`` that has one."""
    return {row.job_id: _forecast(row) for row in _rows(session, job_ids)}


def _forecast(row: InputForecastRow) -> InputForecast:
    return InputForecast(
        start=row.start,
        mean=_unpack(row.mean),
        upper=_unpack(row.upper),
        naive=_unpack(row.naive),
        error=row.error,
        step_s=row.step_s,
        method=row.method,
    )


@dataclass(frozen=True)
class StoredForecast:
    """A job's stored forecast, when it was fitted, and how it has done on the input since."""

    forecast: InputForecast
    fitted_at: datetime
    miss: float | None
    """Mean absolute error of its mean on the minutes measured since it starts (``None``:
    none yet)."""
    naive: float | None
    """The same of the seasonal-naive forecast."""

    @property
    def recent_error(self) -> float | None:
        """Its error over the seasonal-naive forecast's on those minutes (below 1: better)."""
        if self.miss is None or not self.naive:
            return None
        return self.miss / self.naive

    @property
    def trusted(self) -> bool:
        return self.forecast.trusted(self.miss, self.naive)


def stored_forecast(session: Session, job_id: str) -> StoredForecast | None:
    """The job's forecast with its error on the minutes measured since it starts."""
    row = session.get(InputForecastRow, job_id)
    return _stored(session, row) if row is not None else None


def stored_forecasts(session: Session, job_ids: Iterable[str]) -> dict[str, StoredForecast]:
    """:func:`stored_forecast` of each of ``job_ids`` that has a forecast (one query for the
    forecasts, one per forecast for its minutes)."""
    return {row.job_id: _stored(session, row) for row in _rows(session, job_ids)}


def _rows(session: Session, job_ids: Iterable[str]) -> Sequence[InputForecastRow]:
    ids = list(job_ids)
    if not ids:
        return []
    query = select(InputForecastRow).where(InputForecastRow.job_id.in_(ids))
    return list(session.scalars(query))


def _stored(session: Session, row: InputForecastRow) -> StoredForecast:
    job_id = row.job_id
    forecast = _forecast(row)
    misses, naives = [], []
    for minute in input_minutes(session, job_id, forecast.start, None):
        k = forecast.index(minute.minute)
        if k is not None:
            misses.append(abs(minute.arrived_rate - forecast.mean[k]))
            naives.append(abs(minute.arrived_rate - forecast.naive[k]))
    if not misses:
        return StoredForecast(forecast, row.fitted_at, None, None)
    return StoredForecast(
        forecast, row.fitted_at, sum(misses) / len(misses), sum(naives) / len(naives)
    )


def forecast_jobs(session: Session) -> list[str]:
    """The jobs a fit covers: every registered one not removed."""
    return list(session.scalars(select(Job.id).where(Job.status != "removed").order_by(Job.id)))


def job_series(
    session: Session, job_ids: Sequence[str], now: datetime, days: float
) -> dict[str, MinuteSeries]:
    """The minute series of each of ``job_ids`` with at least :data:`MIN_MINUTES` known."""
    found: dict[str, MinuteSeries] = {}
    for job_id in job_ids:
        series = minute_series(session, job_id, now, days)
        if series is not None and sum(not math.isnan(r) for r in series.rates) >= MIN_MINUTES:
            found[job_id] = series
    return found


def fit_jobs(
    session: Session, job_ids: Sequence[str], now: datetime, days: float
) -> Mapping[str, InputForecast]:
    """Fit and store, in this process, the forecast of each of ``job_ids`` that has the history
    for one (:func:`job_series`); returns what was fitted."""
    fitted: dict[str, InputForecast] = {}
    for job_id, series in job_series(session, job_ids, now, days).items():
        forecast = fit_series(series)
        store_forecast(session, job_id, forecast, now)
        fitted[job_id] = forecast
    return fitted


def fit_jobs_on_spark(
    session: Session, job_ids: Sequence[str], now: datetime, days: float, master: str
) -> Mapping[str, InputForecast]:
    """:func:`fit_jobs` as one PySpark job on ``master`` (:mod:`scheduler.spark.forecasts`)."""
    series = job_series(session, job_ids, now, days)
    fitted = fit_on_spark({k: (v.start, v.rates) for k, v in series.items()}, master=master)
    for job_id, forecast in fitted.items():
        store_forecast(session, job_id, forecast, now)
    return fitted


class RegistryForecasts:
    """The rounds' forecast source (:class:`~scheduler.round.forecasts.ForecastSource`): the
    stored forecasts, read in a session of their own."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    def latest(self, job_ids: Sequence[str], now: datetime) -> Mapping[str, InputForecast]:
        with self.sessions() as session:
            return latest_forecasts(session, job_ids)
