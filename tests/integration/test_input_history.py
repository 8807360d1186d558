"""Each job's input per minute, rolled up from its windows on the real registry (Postgres with
the migrations applied; every test rolled back)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from scheduler.cluster.static import StaticCluster
from scheduler.registry import history
from scheduler.registry import repository as repo
from scheduler.registry.engine import make_session_factory
from scheduler.registry.history import input_minutes, minute_shares, roll_up
from scheduler.registry.tables import Job, MetricWindow
from scheduler.service import build_service
from tests.conftest import FixedClock, bearer, make_settings
from tests.integration.test_api import new_job, new_tenant, report_body

pytestmark = pytest.mark.postgres

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
RECEIVED = datetime(2026, 3, 2, 13, 0, tzinfo=UTC)


def make_job(session: Session, name: str) -> str:
    tenant = repo.create_tenant(session, f"t-{name}", f"hash-{name}", T0)
    job = Job(
        id=repo.new_id(), tenant_id=tenant.id, name=name, priority=10.0, slo={"latency_ms": 1000},
        executors_initial=1, executors_min=1, executors_max=4, executor_cores=1,
        executor_memory_mb=1024, actuator="agent", status="admitted", status_reason="",
        agent_token_hash=f"agent-{name}", target_executors=1, created_at=T0, updated_at=T0,
    )  # fmt: skip
    repo.add_job(session, job)
    return job.id


def store(
    session: Session,
    job_id: str,
    spans: list[tuple[float, float]],
    *,
    arrived: float | None = 100.0,
    processed: float | None = 90.0,
    received: datetime = RECEIVED,
) -> None:
    """Windows over ``spans`` (seconds after T0), all received at ``received``."""
    repo.insert_windows(
        session,
        [
            {
                "job_id": job_id, "window_start": T0 + timedelta(seconds=a),
                "window_end": T0 + timedelta(seconds=b), "received_at": received,
                "executors": 1, "report": {}, "utility": 10.0, "input_rate": arrived,
                "processed_rate": processed,
            }
            for a, b in spans
        ],
    )  # fmt: skip


def test_a_window_is_shared_out_between_the_minutes_it_covers_by_its_seconds() -> None:
    start = T0 + timedelta(seconds=55)
    assert minute_shares(start, start + timedelta(seconds=10)) == [
        (T0, 5.0),
        (T0 + timedelta(minutes=1), 5.0),
    ]
    assert minute_shares(T0, T0 + timedelta(seconds=10)) == [(T0, 10.0)]
    assert minute_shares(T0, T0 + timedelta(minutes=2)) == [
        (T0, 60.0),
        (T0 + timedelta(minutes=1), 60.0),
    ]
    assert minute_shares(T0, T0) == []


def test_windows_are_rolled_up_into_rates_per_minute_once_each(db_session: Session) -> None:
    job = make_job(db_session, "pages")
    other = make_job(db_session, "counts")
    # A full first minute in six windows, one straddling into the second, then 40 s at twice
    # the rate; the other job's windows are its own.
    store(db_session, job, [(0, 10), (10, 20), (20, 30), (30, 40), (40, 50), (50, 60)])
    store(db_session, job, [(60, 70)])
    store(db_session, job, [(70, 80), (80, 90), (90, 100)], arrived=200.0, processed=200.0)
    store(db_session, other, [(0, 30)], arrived=7.0, processed=None)

    assert roll_up(db_session, RECEIVED) == 11
    minutes = input_minutes(db_session, job, T0, T0 + timedelta(hours=1))
    assert [m.minute for m in minutes] == [T0, T0 + timedelta(minutes=1)]
    first, second = minutes
    assert (first.arrived_rate, first.processed_rate, first.seconds) == (100.0, 90.0, 60.0)
    assert second.seconds == 40.0
    assert second.arrived_rate == pytest.approx((100 * 10 + 200 * 30) / 40)
    assert second.processed_rate == pytest.approx((90 * 10 + 200 * 30) / 40)
    (theirs,) = input_minutes(db_session, other, T0, T0 + timedelta(hours=1))
    assert (theirs.arrived_rate, theirs.processed_rate) == (7.0, 0.0)  # no batch ended

    # Nothing new: a second roll-up reads nothing and the minutes stay as they were.
    assert roll_up(db_session, RECEIVED + timedelta(minutes=5)) == 0
    assert input_minutes(db_session, job, T0, T0 + timedelta(hours=1)) == minutes


def test_windows_received_later_add_to_their_minutes_and_recent_ones_wait(
    db_session: Session,
) -> None:
    job = make_job(db_session, "pages")
    store(db_session, job, [(60, 70), (70, 80)])
    store(db_session, job, [(80, 90)], arrived=400.0, received=RECEIVED + timedelta(minutes=2))
    assert roll_up(db_session, RECEIVED + timedelta(minutes=1)) == 2  # the third waits
    (minute,) = input_minutes(db_session, job, T0, T0 + timedelta(hours=1))
    assert (minute.arrived_rate, minute.seconds) == (100.0, 20.0)

    assert roll_up(db_session, RECEIVED + timedelta(minutes=3)) == 1
    (minute,) = input_minutes(db_session, job, T0, T0 + timedelta(hours=1))
    assert minute.seconds == 30.0
    assert minute.arrived_rate == pytest.approx((100 * 20 + 400 * 10) / 30)


def test_a_backlog_of_windows_rolls_up_in_batches_to_the_same_minutes(
    db_session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = make_job(db_session, "pages")
    for k in range(7):  # seven receipt times, two windows each
        store(
            db_session, job, [(20 * k, 20 * k + 10), (20 * k + 10, 20 * k + 20)],
            arrived=10.0 * (k + 1), received=RECEIVED + timedelta(seconds=k),
        )  # fmt: skip
    monkeypatch.setattr(history, "ROLL_UP_BATCH", 3)
    # A batch ends at a receipt time and takes every window received then: 4, 4, 4, then 2.
    reads = [roll_up(db_session, RECEIVED + timedelta(minutes=1)) for _ in range(5)]
    assert reads == [4, 4, 4, 2, 0]
    first, second, third = input_minutes(db_session, job, T0, T0 + timedelta(hours=1))
    assert first.seconds == second.seconds == 60.0 and third.seconds == 20.0
    assert first.arrived_rate == pytest.approx((10 + 20 + 30) / 3)
    assert third.arrived_rate == pytest.approx(70.0)


def test_old_minutes_are_purged_and_a_removed_job_takes_its_minutes_along(
    db_session: Session,
) -> None:
    job = make_job(db_session, "pages")
    store(db_session, job, [(0, 10), (3600, 3610)])
    roll_up(db_session, RECEIVED + timedelta(hours=2))
    assert history.purge_input_hours(db_session, T0 + timedelta(minutes=59)) == 0  # not over
    assert history.purge_input_hours(db_session, T0 + timedelta(hours=1)) == 1
    (left,) = input_minutes(db_session, job, T0, T0 + timedelta(days=1))
    assert left.minute == T0 + timedelta(hours=1)
    db_session.delete(db_session.get(Job, job))
    db_session.flush()
    assert input_minutes(db_session, job, T0, T0 + timedelta(days=1)) == []


def test_the_service_rolls_up_what_its_api_stored_and_purges_it_after_history_days(
    fresh_pg_url: str, clock: FixedClock
) -> None:
    from scheduler.registry import migrate

    migrate.upgrade(fresh_pg_url)
    service = build_service(
        make_settings(fresh_pg_url, history_days=2.0, retention_days=1.0),
        cluster=StaticCluster(4, 8, 32768),
        clock=clock,
    )
    try:
        with TestClient(service.app) as api:
            job = new_job(api, new_tenant(api)["token"])
            for k in range(6):  # a minute of windows, stamped at the clock's time
                sent = api.post(
                    f"/v1/jobs/{job['id']}/reports",
                    json=report_body(clock.now - timedelta(minutes=1) + timedelta(seconds=10 * k)),
                    headers=bearer(job["agent_token"]),
                )
                assert sent.status_code == 200, sent.text
        assert service.roll_up_history() == 0  # received within ROLL_UP_LAG: not yet
        clock.now += timedelta(minutes=1)
        assert service.roll_up_history() == 6
        factory = make_session_factory(service.engine)
        with factory() as session:
            minutes = input_minutes(session, job["id"], clock.now - timedelta(hours=1), clock.now)
        assert [m.seconds for m in minutes] == [60.0]
        assert minutes[0].arrived_rate > 0

        clock.now += timedelta(days=1, hours=1)  # past the windows' retention only
        service.purge()
        with factory() as session:
            assert session.scalar(select(func.count()).select_from(MetricWindow)) == 0
            assert (
                len(input_minutes(session, job["id"], clock.now - timedelta(days=9), clock.now))
                == 1
            )
        clock.now += timedelta(days=1)  # past the history's too
        service.purge()
        with factory() as session:
            assert input_minutes(session, job["id"], clock.now - timedelta(days=9), clock.now) == []
    finally:
        service.engine.dispose()


def test_a_tenant_reads_its_jobs_input_per_minute_and_nobody_elses(
    api: TestClient, db_session: Session
) -> None:
    tenant = new_tenant(api)
    job = new_job(api, tenant["token"])
    start = T0 - timedelta(minutes=3)
    for k in range(18):  # three minutes of 10-s windows
        sent = api.post(
            f"/v1/jobs/{job['id']}/reports",
            json=report_body(start + timedelta(seconds=10 * k)),
            headers=bearer(job["agent_token"]),
        )
        assert sent.status_code == 200, sent.text
    roll_up(db_session, datetime.now(UTC) + timedelta(days=3650))

    path = f"/v1/jobs/{job['id']}/input"
    everything = api.get(path, headers=bearer(tenant["token"]))
    assert everything.status_code == 200, everything.text
    minutes = everything.json()["minutes"]
    assert [datetime.fromisoformat(m["minute"]) for m in minutes] == [
        start + timedelta(minutes=k) for k in range(3)
    ]
    assert all(m["seconds"] == 60.0 and m["arrived_rate"] > 0 for m in minutes)
    # A range and a limit: the newest minutes of the range, oldest first.
    newest = api.get(path, params={"since": start.isoformat(), "limit": 2},
                     headers=bearer(tenant["token"])).json()["minutes"]  # fmt: skip
    assert newest == minutes[1:]
    other = new_tenant(api, "other")
    assert api.get(path, headers=bearer(other["token"])).status_code == 404
