"""A registry with history, for the dashboard's browser tests and its benchmark.

Tenants and jobs are created through the HTTP API (as tenants do), some reports are posted
through it (as agents do, so their derived values are the service's own), and the scheduler's
past -- rounds with their actions, and optionally many metric windows -- is written straight
into the registry with SQLAlchemy, the way the loop records it, only faster.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import insert, update
from sqlalchemy.orm import Session

from scheduler.registry import forecasts, history
from scheduler.registry.engine import make_engine
from scheduler.registry.tables import Action, Job, MetricWindow, Round

POLICY = "henge"
ACTION_ODDS = 0.15  # the chance that a round after the admissions changes something


@dataclass(frozen=True)
class SeededJob:
    id: str
    name: str
    tenant: str
    priority: float
    agent_token: str


@dataclass
class Seeded:
    tenants: dict[str, str] = field(default_factory=dict)  # name -> token
    tenant_ids: dict[str, str] = field(default_factory=dict)  # name -> id
    jobs: list[SeededJob] = field(default_factory=list)
    rounds: int = 0
    actions: int = 0
    start: datetime | None = None
    end: datetime | None = None
    need: dict[str, int] = field(default_factory=dict)  # executors a job needs for its SLO
    changes: dict[str, list[tuple[datetime, int]]] = field(default_factory=dict)

    def executors_at(self, job_id: str, at: datetime) -> int:
        """The job's executors after the rounds up to ``at`` (0 before its admission)."""
        current = 0
        for when, executors in self.changes.get(job_id, []):
            if when > at:
                break
            current = executors
        return current

    def jobs_of(self, tenant: str) -> list[SeededJob]:
        return [j for j in self.jobs if j.tenant == tenant]


def _job_body(name: str, index: int, rng: random.Random) -> dict[str, Any]:
    kind = index % 3
    slo: dict[str, Any] = (
        {"latency_ms": rng.choice([60, 200, 1000]), "latency_stat": "mean"}
        if kind == 0
        else {"juice": 1.0}
        if kind == 1
        else {"latency_ms": 500, "juice": 0.9}
    )
    return {
        "name": name,
        "priority": float(rng.choice([10, 20, 35, 50, 80])),
        "slo": slo,
        "executors": {"initial": 2, "min": 1, "max": 16, "cores": 1, "memory_mb": 2048},
    }


def create_tenants_and_jobs(
    http: httpx.Client, admin_token: str, tenants: int, jobs: int, rng: random.Random
) -> Seeded:
    seeded = Seeded()
    admin = {"Authorization": f"Bearer {admin_token}"}
    for t in range(tenants):
        name = f"tenant-{t}"
        answer = http.post("/v1/tenants", json={"name": name}, headers=admin).raise_for_status()
        seeded.tenants[name] = answer.json()["token"]
        seeded.tenant_ids[name] = answer.json()["id"]
    names = list(seeded.tenants)
    for j in range(jobs):
        tenant = names[j % len(names)]
        body = _job_body(f"job-{j:03d}", j, rng)
        headers = {"Authorization": f"Bearer {seeded.tenants[tenant]}"}
        job = http.post("/v1/jobs", json=body, headers=headers).raise_for_status().json()
        seeded.jobs.append(
            SeededJob(job["id"], job["name"], tenant, job["priority"], job["agent_token"])
        )
    return seeded


def _utility(priority: float, executors: int, need: int) -> float:
    return priority * min(1.0, executors / need) if executors > 0 else 0.0


def write_rounds(
    session: Session,
    seeded: Seeded,
    rounds: int,
    end: datetime,
    interval_s: float,
    rng: random.Random,
) -> dict[str, int]:
    """``rounds`` rounds ending at ``end``: the jobs are admitted one a round, then now and then
    a reconfigure, reduce or revert. Returns each job's executors after the last round."""
    need = seeded.need = {j.id: rng.randint(2, 10) for j in seeded.jobs}
    seeded.changes = {j.id: [] for j in seeded.jobs}
    executors = {j.id: 0 for j in seeded.jobs}
    priority = {j.id: j.priority for j in seeded.jobs}
    start = end - timedelta(seconds=interval_s * (rounds - 1))
    round_rows: list[dict[str, Any]] = []
    planned: list[list[dict[str, Any]]] = []
    for i in range(rounds):
        at = start + timedelta(seconds=interval_s * i)
        changes = _plan(i, seeded, executors, need, rng)
        for change in changes:
            executors[change["job_id"]] = change["to_executors"]
            seeded.changes[change["job_id"]].append((at, change["to_executors"]))
        admitted = [j for j, n in executors.items() if n > 0]
        total = sum(_utility(priority[j], executors[j], need[j]) for j in admitted)
        maximum = sum(priority[j] for j in admitted)
        round_rows.append(
            {
                "number": i + 1,
                "started_at": at,
                "finished_at": at + timedelta(milliseconds=40),
                "policy": POLICY,
                "state": "converged" if total >= maximum - 1e-9 else "not_converged",
                "action": changes[0]["kind"] if changes else "none",
                "job_id": changes[0]["job_id"] if changes else None,
                "reason": changes[0]["reason"] if changes else "no job below its SLO can gain",
                "total_utility": total,
                "max_utility": maximum,
            }
        )
        planned.append(changes)
    ids = session.scalars(
        insert(Round).returning(Round.id, sort_by_parameter_order=True), round_rows
    ).all()
    action_rows = [
        {"round_id": round_id, **change}
        for round_id, changes in zip(ids, planned, strict=True)
        for change in changes
    ]
    if action_rows:
        session.execute(insert(Action), action_rows)
    seeded.rounds, seeded.actions = rounds, len(action_rows)
    seeded.start, seeded.end = start, end
    return executors


def _plan(
    i: int, seeded: Seeded, executors: dict[str, int], need: dict[str, int], rng: random.Random
) -> list[dict[str, Any]]:
    def change(kind: str, job_id: str, to: int, reason: str) -> dict[str, Any]:
        return {
            "kind": kind,
            "job_id": job_id,
            "from_executors": executors[job_id],
            "to_executors": to,
            "reason": reason,
        }

    if i < len(seeded.jobs):
        return [change("admit", seeded.jobs[i].id, 2, "fits in the free capacity")]
    if not seeded.jobs or rng.random() >= ACTION_ODDS:
        return []
    kind = rng.choice(["reconfigure", "reconfigure", "reduce", "revert"])
    job = rng.choice(seeded.jobs).id
    if kind == "reconfigure":
        return [change(kind, job, min(16, executors[job] + 2), "below its SLO; most juice gained")]
    if kind == "reduce":
        return [change(kind, job, max(1, executors[job] - 1), "above its SLO; frees capacity")]
    other = rng.choice(seeded.jobs).id
    jobs = [job] if other == job else [job, other]
    return [change(kind, j, max(1, executors[j] - 2), "utility fell; undoing") for j in jobs]


def admit_jobs(session: Session, executors: dict[str, int]) -> None:
    for job_id, target in executors.items():
        session.execute(
            update(Job)
            .where(Job.id == job_id)
            .values(status="admitted", status_reason="admitted", target_executors=max(1, target))
        )


def _juice(executors: int, need: int) -> float:
    return min(1.0, 0.5 + 0.5 * executors / need)


def _latency(executors: int, need: int) -> float:
    return 40.0 + 200.0 * need / max(1, executors)


def _report(
    start: datetime, end: datetime, executors: int, need: int, rng: random.Random
) -> dict[str, Any]:
    arrived = 20_000.0
    processed = arrived * min(1.0, _juice(executors, need) + rng.uniform(-0.02, 0.0))
    mean = _latency(executors, need) + rng.uniform(0, 10)
    return {
        "window_start": start.isoformat(),
        "window_end": end.isoformat(),
        "executors": executors,
        "cores_per_executor": 1,
        "busy_core_ms": 1000.0 * executors * (end - start).total_seconds() * 0.7,
        "sources": [{"name": "events", "arrived_rows": arrived, "processed_rows": processed}],
        "latency_ms": {"mean": mean, "p95": mean * 1.5, "p99": mean * 1.8},
    }


def post_reports(
    http: httpx.Client,
    seeded: Seeded,
    per_job: int,
    end: datetime,
    interval_s: float,
    executors: dict[str, int],
    rng: random.Random,
) -> None:
    """``per_job`` windows for each job through the API, as its agent sends them."""
    step = timedelta(seconds=interval_s)
    for job in seeded.jobs:
        headers = {"Authorization": f"Bearer {job.agent_token}"}
        for k in range(per_job, 0, -1):
            window_end = end - step * (k - 1)
            held = max(1, executors[job.id])
            body = _report(window_end - step, window_end, held, seeded.need[job.id], rng)
            http.post(f"/v1/jobs/{job.id}/reports", json=body, headers=headers).raise_for_status()


def write_windows(
    session: Session,
    seeded: Seeded,
    per_job: int,
    end: datetime,
    interval_s: float,
    rng: random.Random,
) -> None:
    """``per_job`` windows for each job straight into the registry (many, fast), ending one
    interval before ``end`` so reports posted afterwards are newer."""
    step = timedelta(seconds=interval_s)
    rows: list[dict[str, Any]] = []
    for job in seeded.jobs:
        for k in range(per_job, 0, -1):
            window_end = end - step * k
            executors = max(1, seeded.executors_at(job.id, window_end))
            need = seeded.need[job.id]
            juice = _juice(executors, need)
            rows.append(
                {
                    "job_id": job.id,
                    "window_start": window_end - step,
                    "window_end": window_end,
                    "received_at": window_end,
                    "executors": executors,
                    "report": _report(window_end - step, window_end, executors, need, rng),
                    "utility": _utility(job.priority, executors, need),
                    "juice": juice,
                    "juice_raw": juice,
                    "latency_ms": _latency(executors, need),
                    "capacity": 0.7,
                    "input_rate": 2000.0,
                    "processed_rate": 2000.0 * juice,
                }
            )
    for chunk in range(0, len(rows), 5000):
        session.execute(insert(MetricWindow), rows[chunk : chunk + 5000])


def fit_forecasts(session: Session, seeded: Seeded, end: datetime) -> None:
    """Roll the windows up into each job's input per minute and store its forecast fitted on
    them, as the service's schedule does (however short the history)."""
    history.roll_up(session, end)
    for job in seeded.jobs:
        series = forecasts.minute_series(session, job.id, end, 1)
        if series is not None:
            forecasts.store_forecast(session, job.id, forecasts.fit_series(series), end)


def seed_registry(
    base_url: str,
    admin_token: str,
    database_url: str,
    *,
    tenants: int = 3,
    jobs: int = 6,
    rounds: int = 300,
    reports_per_job: int = 12,
    bulk_windows_per_job: int = 0,
    interval_s: float = 10.0,
    end: datetime | None = None,
    seed: int = 7,
    with_forecasts: bool = False,
) -> Seeded:
    """Fill the registry of the service at ``base_url`` (database ``database_url``)."""
    rng = random.Random(seed)
    end = (end or datetime.now(UTC)).replace(microsecond=0)
    engine = make_engine(database_url, pool_size=1)
    try:
        with httpx.Client(base_url=base_url, timeout=30) as http:
            seeded = create_tenants_and_jobs(http, admin_token, tenants, jobs, rng)
            with Session(engine) as session:
                executors = write_rounds(session, seeded, rounds, end, interval_s, rng)
                admit_jobs(session, executors)
                if bulk_windows_per_job:
                    last = end - timedelta(seconds=interval_s * reports_per_job)
                    write_windows(session, seeded, bulk_windows_per_job, last, interval_s, rng)
                    if with_forecasts:
                        fit_forecasts(session, seeded, last)
                session.commit()
            post_reports(http, seeded, reports_per_job, end, interval_s, executors, rng)
    finally:
        engine.dispose()
    return seeded
