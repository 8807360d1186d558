"""Shared fixtures: a fresh Postgres database per test session, migrated with Alembic, and a
transaction per test that is rolled back afterwards."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, make_url
from sqlalchemy.orm import Session

from scheduler.api.app import create_app
from scheduler.api.deps import get_report_session, get_session
from scheduler.cluster.static import StaticCluster
from scheduler.compiled import build_problems, problem_message
from scheduler.config import Settings
from scheduler.registry import migrate
from scheduler.registry.engine import make_engine
from scheduler.web import mount_dashboard

ADMIN_TOKEN = "test-admin-token-0123456789"

SERVER_URL = os.environ.get(
    "HENGE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def pytest_configure(config: pytest.Config) -> None:
    # A compiled core older than its source would test code that is no longer on disk.
    problems = build_problems()
    if problems:
        pytest.exit(problem_message(problems), returncode=pytest.ExitCode.USAGE_ERROR)


def _libpq(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def pg_server() -> str:
    try:
        with psycopg.connect(_libpq(SERVER_URL), connect_timeout=5):
            pass
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"Postgres is not reachable at {make_url(SERVER_URL).render_as_string()}: {exc}. "
            "Start it (make test does) or point HENGE_TEST_PG_URL at one.",
            pytrace=False,
        )
    return SERVER_URL


def create_database(server_url: str, prefix: str = "henge_test") -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_libpq(server_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(server_url: str, url: str) -> None:
    name = make_url(url).database
    with psycopg.connect(_libpq(server_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def fresh_pg_url(pg_server: str) -> Iterator[str]:
    """An empty database of its own, dropped afterwards (for tests that run migrations or
    separate processes)."""
    url = create_database(pg_server)
    yield url
    drop_database(pg_server, url)


@pytest.fixture(scope="session")
def pg_url(pg_server: str) -> Iterator[str]:
    url = create_database(pg_server)
    migrate.upgrade(url)
    yield url
    drop_database(pg_server, url)


@pytest.fixture(scope="session")
def pg_engine(pg_url: str) -> Iterator[Engine]:
    engine = make_engine(pg_url, pool_size=2)
    yield engine
    engine.dispose()


@pytest.fixture
def db_session(pg_engine: Engine) -> Iterator[Session]:
    """A session inside a transaction that is rolled back after the test; commits made by the
    code under test only release savepoints."""
    with pg_engine.connect() as conn:
        outer = conn.begin()
        session = Session(
            bind=conn, join_transaction_mode="create_savepoint", expire_on_commit=False
        )
        try:
            yield session
        finally:
            session.close()
            outer.rollback()


class FixedClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))


def make_settings(url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": url,
        "admin_token": ADMIN_TOKEN,
        "max_report_bytes": 64 * 1024,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def api(
    pg_url: str, pg_engine: Engine, db_session: Session, clock: FixedClock
) -> Iterator[TestClient]:
    app = create_app(make_settings(pg_url), pg_engine, StaticCluster(4, 8, 32768), clock=clock)
    mount_dashboard(app)  # as the service serves it
    # Reports too run in the test's transaction (the service gives them sessions that commit
    # each statement; tests/integration/test_service_ops.py runs those).
    app.dependency_overrides[get_session] = lambda: db_session
    app.dependency_overrides[get_report_session] = lambda: db_session
    with TestClient(app) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


ADMIN = bearer(ADMIN_TOKEN)
