"""``henge bench history``: what each job's input per minute costs the registry.

On a scratch Postgres database with the migrations applied: ``jobs`` jobs whose input minutes
fill ``days`` days (written as weeks of roll-ups would leave them),
then the table's size on disk per job (rows, key and index included, after ``VACUUM``), the
time to read one job's whole history and its last hour (the range reads a forecast fit and a
page make), and the roll-up's speed on an hour of 10-s windows for every job.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, text

from scheduler.registry import history
from scheduler.registry import repository as repo
from scheduler.registry.engine import make_engine, make_session_factory
from scheduler.registry.migrate import upgrade
from scheduler.registry.tables import InputHour, Job

END = datetime(2026, 3, 2, tzinfo=UTC)
"""The end of the filled history (a Monday)."""
DAILY = 2 * math.pi / 86_400


@dataclass(frozen=True)
class HistoryFigures:
    jobs: int
    days: float
    minutes_per_job: int
    bytes_per_job: float
    bytes_per_minute: float
    read_all_ms: float
    """Median time to read one job's whole history."""
    read_hour_ms: float
    """Median time to read one job's last hour."""
    rollup_windows: int
    rollup_windows_per_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _add_jobs(engine: Engine, count: int) -> list[str]:
    with make_session_factory(engine)() as session, session.begin():
        tenant = repo.create_tenant(session, "bench", "bench-token", END)
        ids = []
        for k in range(count):
            job = Job(
                id=repo.new_id(), tenant_id=tenant.id, name=f"job-{k}", priority=10.0,
                slo={"latency_ms": 1000}, executors_initial=1, executors_min=1,
                executors_max=8, executor_cores=1, executor_memory_mb=1024, actuator="agent",
                status="admitted", status_reason="", agent_token_hash=f"agent-{k}",
                target_executors=1, created_at=END, updated_at=END,
            )  # fmt: skip
            repo.add_job(session, job)
            ids.append(job.id)
    return ids


def _hour(start: datetime) -> bytes:
    """An hour of full minutes on a daily wave of input, packed as a roll-up stores it."""
    rows = [
        60 * (100 + 50 * math.sin((start + timedelta(minutes=k)).timestamp() * DAILY))
        for k in range(60)
    ]
    return history.pack(rows + rows + [60.0] * 60)


def _fill(engine: Engine, ids: list[str], days: float) -> int:
    """Every job's hours over ``days`` up to :data:`END`; returns how many hours a job."""
    hours = [END - history.HOUR * (k + 1) for k in range(int(days * 24))]
    packed = {hour: _hour(hour) for hour in hours}
    with engine.begin() as conn:
        for job_id in ids:
            conn.execute(
                InputHour.__table__.insert(),
                [{"job_id": job_id, "hour": h, "minutes": data} for h, data in packed.items()],
            )
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM (ANALYZE) input_hours"))
    return len(hours)


def _median_ms(read: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        read()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _rollup_speed(engine: Engine, ids: list[str], windows_per_job: int) -> tuple[int, float]:
    received = END + timedelta(hours=2)
    rows = [
        {
            "job_id": job_id, "window_start": END + timedelta(seconds=10 * k),
            "window_end": END + timedelta(seconds=10 * k + 10), "received_at": received,
            "executors": 1, "report": {}, "utility": 10.0, "input_rate": 100.0,
            "processed_rate": 100.0,
        }
        for job_id in ids
        for k in range(windows_per_job)
    ]  # fmt: skip
    factory = make_session_factory(engine)
    with factory() as session, session.begin():
        for job_id in ids:
            repo.insert_windows(session, [r for r in rows if r["job_id"] == job_id])
    started = time.perf_counter()
    read = 0
    while True:
        with factory() as session, session.begin():
            batch = history.roll_up(session, received)
        read += batch
        if batch < history.ROLL_UP_BATCH:
            break
    return read, read / (time.perf_counter() - started)


def measure(database_url: str, jobs: int, days: float, repeats: int = 5) -> HistoryFigures:
    """The figures on the (empty, scratch) database at ``database_url``."""
    upgrade(database_url)
    engine = make_engine(database_url, pool_size=2)
    try:
        ids = _add_jobs(engine, jobs)
        hours = _fill(engine, ids, days)
        with engine.connect() as conn:
            size = conn.scalar(text("SELECT pg_total_relation_size('input_hours')"))
        factory = make_session_factory(engine)
        with factory() as session:
            since = END - timedelta(days=days)
            read_all = _median_ms(
                lambda: history.input_minutes(session, ids[0], since, END), repeats
            )
            read_hour = _median_ms(
                lambda: history.input_minutes(session, ids[-1], END - timedelta(hours=1), END),
                repeats,
            )
        windows, speed = _rollup_speed(engine, ids, 360)
    finally:
        engine.dispose()
    return HistoryFigures(
        jobs=jobs,
        days=days,
        minutes_per_job=hours * 60,
        bytes_per_job=float(size or 0) / jobs,
        bytes_per_minute=float(size or 0) / jobs / (hours * 60),
        read_all_ms=read_all,
        read_hour_ms=read_hour,
        rollup_windows=windows,
        rollup_windows_per_s=speed,
    )


def summary_lines(f: HistoryFigures) -> list[str]:
    return [
        f"history: {f.jobs} jobs × {f.days:g} days ({f.minutes_per_job:,} minutes a job)",
        f"  on disk: {f.bytes_per_job / 2**20:.2f} MiB a job "
        f"({f.bytes_per_minute:.0f} bytes a minute, key and index included)",
        f"  one job's whole history read in {f.read_all_ms:.1f} ms, its last hour in "
        f"{f.read_hour_ms:.2f} ms (medians)",
        f"  roll-up: {f.rollup_windows:,} windows at {f.rollup_windows_per_s:,.0f} windows/s",
    ]
