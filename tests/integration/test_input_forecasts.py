"""Each job's input forecast on the real registry: fitted from its minutes, stored a row per job,
read back by the rounds, and fitted by `henge forecast fit` (Postgres with the migrations)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from scheduler.forecast.ahead import forecast_ahead
from scheduler.registry import forecasts, history, migrate
from scheduler.registry.engine import make_session_factory
from scheduler.registry.tables import InputHour
from tests.conftest import bearer
from tests.integration.test_api import new_job, new_tenant
from tests.integration.test_cli import henge
from tests.integration.test_input_history import make_job

pytestmark = pytest.mark.postgres

START = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)
NOW = START + timedelta(days=3, minutes=30, seconds=20)


def daily(minute: int) -> float:
    return 1000.0 + 800.0 * math.sin(2 * math.pi * minute / 1440)


def record(
    session: Session,
    job_id: str,
    minutes: int,
    *,
    gap: range = range(0),
    start: datetime = START,
    only: range | None = None,
) -> None:
    """``minutes`` whole minutes of a daily input from ``start`` (none in ``gap``), or of those
    the ones in ``only``, written as the roll-up writes hours."""
    for first in range(0, minutes, 60):
        hour = [0.0] * 180
        for k in range(60):
            m = first + k
            if m < minutes and m not in gap and (only is None or m in only):
                hour[k], hour[60 + k], hour[120 + k] = daily(m) * 60, daily(m) * 60, 60.0
        if any(hour[120:]):
            session.merge(InputHour(job_id=job_id, hour=start + timedelta(minutes=first),
                                    minutes=history.pack(hour)))  # fmt: skip
    session.flush()


def test_a_series_has_nan_where_no_window_covered_a_minute(db_session: Session) -> None:
    job = make_job(db_session, "gappy")
    record(db_session, job, 180, gap=range(100, 110))
    series = forecasts.minute_series(db_session, job, START + timedelta(minutes=170), 1)
    assert series is not None and series.start == START and len(series.rates) == 170
    assert all(math.isnan(r) for r in series.rates[100:110])
    assert series.rates[99] == pytest.approx(daily(99), rel=1e-6)
    assert series.end == START + timedelta(minutes=170)


def test_fitted_forecasts_are_stored_and_read_back_as_fitted(db_session: Session) -> None:
    long, short = make_job(db_session, "long"), make_job(db_session, "short")
    record(db_session, long, 3 * 1440 + 30)
    record(db_session, short, 30)  # under an hour: no forecast
    fitted = forecasts.fit_jobs(db_session, [long, short], NOW, 35)
    assert list(fitted) == [long]
    stored = forecasts.latest_forecasts(db_session, [long, short])
    assert list(stored) == [long]
    forecast = stored[long]
    # The same as fitting the minutes in this process, to the 32-bit floats they are kept in.
    series = forecasts.minute_series(db_session, long, NOW, 35)
    assert series is not None
    expected = forecast_ahead(series.rates, series.end)
    assert forecast.start == START + timedelta(days=3, minutes=30) == expected.start
    assert forecast.mean == pytest.approx(expected.mean, rel=1e-6)
    assert forecast.upper == pytest.approx(expected.upper, rel=1e-6)
    assert forecast.naive == pytest.approx(expected.naive, rel=1e-6)
    assert forecast.method == expected.method and forecast.error == pytest.approx(expected.error)
    # A daily input one day on: the forecast follows the day before.
    assert forecast.mean[0] == pytest.approx(daily(30), rel=0.05)
    # Fitting again replaces the row.
    forecasts.fit_jobs(db_session, [long], NOW + timedelta(hours=1), 35)
    assert forecasts.latest_forecasts(db_session, [long])[long].start == forecast.start


def test_henge_forecast_fit_fits_every_job_with_history(fresh_pg_url: str) -> None:
    migrate.upgrade(fresh_pg_url)
    engine = create_engine(fresh_pg_url)
    try:
        with make_session_factory(engine)() as session, session.begin():
            job = make_job(session, "pages")
            make_job(session, "new")
            # (the command fits up to its own clock: two days up to the hour before now)
            hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
            record(session, job, 2 * 1440, start=hour - timedelta(days=2))
        done = henge("forecast", "fit", env={"HENGE_DATABASE_URL": fresh_pg_url})
        assert done.returncode == 0, done.stderr
        assert "fitted 1 of 2 jobs' forecasts (local)" in done.stdout
        with make_session_factory(engine)() as session:
            assert list(forecasts.latest_forecasts(session, [job])) == [job]
    finally:
        engine.dispose()


def test_a_tenant_reads_its_jobs_forecast_and_how_it_has_done_since(
    api: TestClient, db_session: Session
) -> None:
    tenant = new_tenant(api)
    job = new_job(api, tenant["token"])
    path = f"/v1/jobs/{job['id']}/forecast"
    missing = api.get(path, headers=bearer(tenant["token"]))
    assert missing.status_code == 404 and "no forecast yet" in missing.text

    record(db_session, job["id"], 3 * 1440 + 30)
    (forecast,) = forecasts.fit_jobs(db_session, [job["id"]], NOW, 35).values()
    # Ten minutes of input since the forecast starts: its error on them is reported.
    record(db_session, job["id"], 3 * 1440 + 40, only=range(3 * 1440 + 30, 3 * 1440 + 40))
    answer = api.get(path, headers=bearer(tenant["token"]))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert datetime.fromisoformat(body["start"]) == forecast.start
    assert body["mean"] == pytest.approx(list(forecast.mean), rel=1e-6)
    assert len(body["upper"]) == len(body["naive"]) == 60 and body["step_s"] == 60.0
    assert body["method"] == forecast.method and body["error"] == pytest.approx(forecast.error)
    stored = forecasts.stored_forecast(db_session, job["id"])
    assert stored is not None and stored.miss is not None and stored.naive is not None
    assert body["recent_error"] == pytest.approx(stored.miss / stored.naive)
    assert body["trusted"] is stored.trusted
    # Read with others at once (as the capacity plan does), it is the same; a job without a
    # forecast has none.
    other_job = new_job(api, tenant["token"], name="other-job")
    both = forecasts.stored_forecasts(db_session, [job["id"], other_job["id"]])
    assert both == {job["id"]: stored}
    other = new_tenant(api, "other")
    assert api.get(path, headers=bearer(other["token"])).status_code == 404
