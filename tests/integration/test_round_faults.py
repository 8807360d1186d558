"""The scheduler killed (SIGKILL) in the middle of a round, at each step, on real Postgres: a
round is applied whole or not at all, no action is applied twice, and the next process resumes
from the stored state.

``HENGE_FAILPOINT`` makes a real ``henge serve`` kill itself at one step of the first round that
changes something (here: the round admitting a newly registered job); a second server on the same
registry, without it, then runs the rounds.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from scheduler.registry.engine import make_engine, make_session_factory
from scheduler.registry.tables import Action, Job, Round, StoredSchedulerState
from tests.serving import ServerHandle, run_server

FAST = {"HENGE_ROUND_INTERVAL_S": "1", "HENGE_LEADER_RETRY_S": "1", "HENGE_POLICY": "henge"}
JOB = {
    "name": "pageload",
    "priority": 35,
    "slo": {"latency_ms": 500},
    "executors": {"initial": 2, "min": 1, "max": 8},
}


def register(server: ServerHandle) -> str:
    admin = {"Authorization": f"Bearer {server.admin_token}"}
    tenant = httpx.post(f"{server.url}/v1/tenants", json={"name": "ops"}, headers=admin).json()
    created = httpx.post(f"{server.url}/v1/jobs", json=JOB,
                         headers={"Authorization": f"Bearer {tenant['token']}"})  # fmt: skip
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def registry(session: Session, job_id: str) -> dict[str, Any]:
    """What the registry holds about the rounds, the job and the scheduler's state."""
    job = session.get(Job, job_id)
    assert job is not None
    state = session.get(StoredSchedulerState, 1)
    numbers = list(session.scalars(select(Round.number).order_by(Round.number)))
    return {
        "status": job.status,
        "target": job.target_executors,
        "admissions": list(session.scalars(select(Action.round_id).where(Action.job_id == job_id))),
        "numbers": numbers,
        "last_round": state.last_round if state is not None else 0,
        "state": state.state if state is not None else None,
    }


@pytest.mark.parametrize("step", ["round.decided", "round.published", "round.recorded"])
def test_a_round_killed_at_any_step_is_applied_whole_or_not_at_all(
    fresh_pg_url: str, step: str
) -> None:
    engine = make_engine(fresh_pg_url, pool_size=1)
    sessions = make_session_factory(engine)
    try:
        with run_server(fresh_pg_url, env={**FAST, "HENGE_FAILPOINT": step}) as doomed:
            job_id = register(doomed)
            deadline = time.monotonic() + 30
            while doomed.process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            assert doomed.process.returncode == -9, doomed.log_text()[-2000:]
        with sessions() as session:
            after_kill = registry(session, job_id)
        # Nothing of the killed round: the job still waits, its target as registered, no action,
        # and the stored state is the one of the last committed round.
        assert after_kill["status"] == "queued" and after_kill["admissions"] == []
        assert after_kill["last_round"] == (after_kill["numbers"] or [0])[-1]

        with run_server(fresh_pg_url, env=FAST, migrate_first=False):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with sessions() as session:
                    resumed = registry(session, job_id)
                if resumed["status"] == "admitted" and len(resumed["numbers"]) >= (
                    len(after_kill["numbers"]) + 3
                ):
                    break
                time.sleep(0.3)
        assert resumed["status"] == "admitted" and resumed["target"] == 2
        assert len(resumed["admissions"]) == 1  # applied once
        # The round numbers go on from the stored state: no gap, no repeat.
        numbers = resumed["numbers"]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
        assert numbers[: len(after_kill["numbers"])] == after_kill["numbers"]
        assert resumed["last_round"] == numbers[-1]
    finally:
        engine.dispose()
