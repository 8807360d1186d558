"""Migrations: up, down and up again on Postgres and SQLite; models and migrations agree."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from scheduler.registry import migrate
from scheduler.registry.engine import make_engine
from scheduler.registry.tables import Base

TABLES = {
    "tenants",
    "jobs",
    "metric_windows",
    "rounds",
    "actions",
    "allocations",
    "scheduler_state",
    "dashboard_sessions",
    "input_hours",
    "registry_marks",
    "input_forecasts",
    "alembic_version",
}


@pytest.fixture(params=["postgres", "sqlite"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'registry.db'}"
    return request.getfixturevalue("fresh_pg_url")


def test_upgrade_downgrade_upgrade_leaves_a_current_schema(empty_url: str):
    engine = make_engine(empty_url, pool_size=1)
    try:
        migrate.upgrade(empty_url)
        assert set(inspect(engine).get_table_names()) == TABLES
        migrate.downgrade(empty_url, "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
        assert not migrate.schema_is_current(engine)
        migrate.upgrade(empty_url)
        assert migrate.schema_is_current(engine)
        # The last revisions go down and up again one at a time too.
        migrate.downgrade(empty_url, "-1")
        columns = {c["name"] for c in inspect(engine).get_columns("jobs")}
        assert "replace_executors" not in columns and "replace_requested_at" not in columns
        migrate.downgrade(empty_url, "-1")
        assert "input_forecasts" not in inspect(engine).get_table_names()
        assert "input_hours" in inspect(engine).get_table_names()
        migrate.downgrade(empty_url, "-1")
        assert "input_hours" not in inspect(engine).get_table_names()
        migrate.downgrade(empty_url, "-1")
        indexes = {i["name"] for i in inspect(engine).get_indexes("metric_windows")}
        assert "ix_metric_windows_job_received" not in indexes
        migrate.upgrade(empty_url)
        with engine.connect() as conn:
            diff = compare_metadata(
                MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
            )
        assert diff == [], f"models and migrations differ: {diff}"
    finally:
        engine.dispose()
