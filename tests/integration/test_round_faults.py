"""The scheduler killed (SIGKILL) in the middle of a round, at each step, on real Postgres: a
round is applied whole or not at all, no action is applied twice, and the next process resumes
from the stored state.

``HENGE_FAILPOINT`` makes a real ``henge serve`` kill itself at one step of the first round that
changes something (here: the round admitting a newly registered job); a second server on the same
registry, without it, then runs the rounds. A last test kills the server (from outside) while the
state machine waits out the quiesce after a move, and checks that the next server waits out the
same quiesce and keeps the stored history and blacklist.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from scheduler.registry.engine import make_engine, make_session_factory
from scheduler.registry.tables import Action, Job, Round, StoredSchedulerState
from scheduler.spark.apps import wait_for
from tests.serving import ServerHandle, register_job, run_server

FAST = {"HENGE_ROUND_INTERVAL_S": "1", "HENGE_LEADER_RETRY_S": "1", "HENGE_POLICY": "henge"}


def register(server: ServerHandle) -> str:
    return str(register_job(server)["id"])


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


QUIESCE_S = 20
SLACK = timedelta(seconds=2)
"""A round interval and then some: the quiesce ends in the first round after ``QUIESCE_S``."""
MID_QUIESCE = {
    **FAST,
    "HENGE_POLICY": "henge-paper",
    "HENGE_POLICY_PARAMS": json.dumps({"quiesce_s": QUIESCE_S}),
    "HENGE_SUB_WINDOW_S": "1",
    "HENGE_WINDOW_S": "5",
    "HENGE_STALE_AFTER_S": "15",
    "HENGE_RECOVERY_OBSERVE_S": "0",
}


class _SlowJobReports:
    """Posts one 1-s window a second for a job that keeps missing its 500 ms objective (busy
    90 % of the time, 1 s mean latency) to whichever server ``url`` names; a refused or failed
    post is skipped, as an agent whose scheduler is away would queue it."""

    def __init__(self, url: str, job: dict[str, Any]) -> None:
        self.url, self.job = url, job
        self.executors = int(job["executors"]["initial"])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        headers = {"Authorization": f"Bearer {self.job['agent_token']}"}
        while not self._stop.wait(1.0):
            end = datetime.now(UTC)
            body = {
                "window_start": (end - timedelta(seconds=1)).isoformat(),
                "window_end": end.isoformat(),
                "executors": self.executors,
                "cores_per_executor": 1,
                "busy_core_ms": 900.0 * self.executors,
                "sources": [{"name": "events", "arrived_rows": 1000, "processed_rows": 1000}],
                "latency_ms": {"mean": 1000.0},
            }
            url = f"{self.url}/v1/jobs/{self.job['id']}/reports"
            with contextlib.suppress(httpx.HTTPError):
                answer = httpx.post(url, json=body, headers=headers, timeout=2)
                if answer.status_code == 200:
                    self.executors = int(answer.json()["target_executors"])

    def __enter__(self) -> _SlowJobReports:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def test_a_scheduler_killed_during_a_quiesce_resumes_it_where_it_was(fresh_pg_url: str) -> None:
    """henge-paper grows a job that misses its objective and waits ``QUIESCE_S`` before judging
    the move; the server is killed (SIGKILL) a few seconds into that wait and another one takes
    over the registry. It waits out the same quiesce, counted from the move, not from its start,
    and the state machine's history and blacklist are the ones stored before the kill."""
    engine = make_engine(fresh_pg_url, pool_size=1)
    sessions = make_session_factory(engine)

    def moves() -> list[tuple[int, datetime]]:
        """Each action other than an admission, with when its round started."""
        with sessions() as session:
            query = select(Action.id, Round.started_at).join(Round, Action.round_id == Round.id)
            return [(a, at) for a, at in session.execute(query.where(Action.kind != "admit"))]

    def rounds() -> list[Round]:
        with sessions() as session:
            return list(session.scalars(select(Round).order_by(Round.number)))

    def policy_state() -> dict[str, Any]:
        with sessions() as session:
            stored = session.get(StoredSchedulerState, 1)
            assert stored is not None
            return dict(stored.state["policy_state"])

    try:
        with run_server(fresh_pg_url, env=MID_QUIESCE) as first:
            reports = _SlowJobReports(first.url, register_job(first))
            with reports:
                [(move, moved_at)] = wait_for("a reconfiguration", moves, 60)
                time.sleep(3)  # well inside the quiesce
                before = policy_state()
                first.process.kill()
                first.process.wait(10)
                killed_at = datetime.now(UTC)
                last_before = rounds()[-1].number
                with run_server(fresh_pg_url, env=MID_QUIESCE, migrate_first=False) as second:
                    reports.url = second.url
                    quiesce_end = moved_at + timedelta(seconds=QUIESCE_S)
                    wait_for(
                        "rounds past the end of the quiesce",
                        lambda: [r for r in rounds() if r.started_at > quiesce_end + SLACK],
                        60,
                    )
                    after = policy_state()
    finally:
        engine.dispose()

    resumed = [r for r in rounds() if r.number > last_before]
    assert resumed and all(r.started_at > killed_at for r in resumed)
    # Still quiescing after the restart, until the quiesce that began with the move is over.
    waiting = [r for r in resumed if r.started_at < quiesce_end - timedelta(seconds=1)]
    assert waiting, [(r.started_at, r.reason) for r in resumed[:3]]
    assert all("waiting for quiesce" in r.reason and r.action == "none" for r in waiting)
    over = next(r for r in resumed if r.started_at > quiesce_end + SLACK)
    assert "waiting for quiesce" not in over.reason, over.reason  # not restarted by the kill
    assert moves()[0] == (move, moved_at)  # made once, by the killed server
    numbers = [r.number for r in rounds()]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert after["history"][: len(before["history"])] == before["history"]
    for blacklisted, until in before["blacklist"].items():
        assert after["blacklist"].get(blacklisted) == until
