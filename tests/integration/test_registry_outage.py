"""The registry going away under a running ``henge serve``: a throw-away Postgres server of the
test's own (``initdb`` / ``pg_ctl`` on a temporary directory) is stopped and started again.

While it is down the API answers 503 with ``Retry-After`` at once instead of hanging or failing
with a 500, ``/readyz`` is unready, and the server keeps running; when it is back, everything
answers again without a restart. With the loop running rounds and real agents reporting, the
loop runs no round while the registry is down (it loses the round lock with it), the agents keep
their executors and queue their windows, and once the registry is back they resend them and the
rounds go on: nothing the API acknowledged is lost.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from henge_agent.agent import Agent
from henge_agent.progress import ProgressBook
from scheduler.registry.engine import make_engine, make_session_factory
from scheduler.registry.tables import MetricWindow, Round
from scheduler.spark.apps import wait_for
from tests.agent_doubles import FakeSpark, make_agent, progress
from tests.serving import ServerHandle, free_port, run_server

_BIN = sorted(Path("/usr/lib/postgresql").glob("*/bin"))


class ThrowawayPostgres:
    """A Postgres server on a temporary directory, run as the ``postgres`` system user."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.port = free_port()
        self.bin = _BIN[-1]

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:  # Postgres refuses to run as root
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root}"
        log = str(self.root / "server.log")  # not our pipes: the server outlives the command
        self._run("pg_ctl", "-D", str(self.data), "-l", log, "-o", options, "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"


@pytest.fixture
def registry() -> Iterator[ThrowawayPostgres]:
    if not _BIN:
        pytest.fail("no PostgreSQL server binaries under /usr/lib/postgresql", pytrace=False)
    # Not under pytest's temporary folders: those are closed to the postgres user.
    root = Path(tempfile.mkdtemp(prefix="henge-registry-"))
    server = ThrowawayPostgres(root)
    try:
        server.init()
        server.start()
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _timed_get(server: ServerHandle, path: str, token: str) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    answer = httpx.get(
        f"{server.url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    return answer, time.monotonic() - started


def test_the_api_answers_503_while_the_registry_is_down_and_recovers_by_itself(
    registry: ThrowawayPostgres,
) -> None:
    with run_server(registry.url, env={"HENGE_SCHEDULER_ENABLED": "false"}) as server:
        admin = server.admin_token
        tenant = httpx.post(
            f"{server.url}/v1/tenants",
            json={"name": "ads"},
            headers={"Authorization": f"Bearer {admin}"},
            timeout=10,
        )
        assert tenant.status_code == 201
        token = tenant.json()["token"]

        registry.stop()
        for path, who in (("/v1/jobs", token), ("/v1/tenants", admin), ("/v1/rounds", admin)):
            answer, took = _timed_get(server, path, who)
            assert answer.status_code == 503, answer.text
            assert answer.headers["retry-after"] == "5" and took < 1.0
            assert "registry is unavailable" in answer.json()["detail"]
        ready, took = _timed_get(server, "/readyz", admin)
        assert ready.status_code == 503 and ready.headers["retry-after"] == "5" and took < 1.0
        assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
        assert server.process.poll() is None  # still serving

        registry.start()
        deadline = time.monotonic() + 30
        answer, _ = _timed_get(server, "/v1/jobs", token)
        while answer.status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.5)  # pooled connections of the old server fail once each
            answer, _ = _timed_get(server, "/v1/jobs", token)
        assert answer.status_code == 200 and answer.json() == []
        assert _timed_get(server, "/readyz", admin)[0].status_code == 200
        tenants = _timed_get(server, "/v1/tenants", admin)[0].json()
        assert [t["name"] for t in tenants] == ["ads"]  # nothing was lost


OUTAGE_S = 30.0
"""Long against every timer it must outlast: every job turns stale (``HENGE_STALE_AFTER_S`` 5 s),
the agents' retries back off to their cap (4 s) and retry at it several times, and each queues
30 windows (one a second)."""
LOOP = {
    "HENGE_ROUND_INTERVAL_S": "1",
    "HENGE_SUB_WINDOW_S": "1",
    "HENGE_WINDOW_S": "5",
    "HENGE_STALE_AFTER_S": "5",
    "HENGE_RECOVERY_OBSERVE_S": "3",
    "HENGE_POLICY": "henge-paper",
}
JOB = {
    "priority": 20,
    "slo": {"latency_ms": 5000},
    "executors": {"initial": 2, "min": 1, "max": 4},
    "actuator": "agent",
}


class _Tenant:
    """Three jobs of one tenant, each with the real agent in a stand-in driver (two executors,
    one micro-batch of 40 rows a second)."""

    def __init__(self, server: ServerHandle) -> None:
        admin = {"Authorization": f"Bearer {server.admin_token}"}
        tenant = httpx.post(f"{server.url}/v1/tenants", json={"name": "ads"}, headers=admin)
        token = {"Authorization": f"Bearer {tenant.json()['token']}"}
        self.jobs: dict[str, dict[str, Any]] = {}
        for name in ("clicks", "views", "orders"):
            job = httpx.post(f"{server.url}/v1/jobs", json={**JOB, "name": name}, headers=token)
            assert job.status_code == 201, job.text
            self.jobs[name] = job.json()
        self.sparks = {name: FakeSpark() for name in self.jobs}
        self.agents: dict[str, Agent] = {}
        self.books: dict[str, ProgressBook] = {}
        for name, job in self.jobs.items():
            self.sparks[name].add("1")
            self.sparks[name].add("2")
            self.agents[name], self.books[name] = make_agent(
                self.sparks[name], server.url, job["id"], job["agent_token"],
                sub_window_s=1.0, max_backoff_s=4.0,
            )  # fmt: skip
        self._stop = threading.Event()
        self._feeder = threading.Thread(target=self._feed, daemon=True)

    def _feed(self) -> None:
        batch = 0
        while not self._stop.wait(1.0):
            batch += 1
            start = datetime.now(UTC) - timedelta(seconds=1.5)
            for book in self.books.values():
                book.record(progress(batch, start, 40, 40 * batch, 40 * batch))

    def start(self) -> None:
        self._feeder.start()
        for agent in self.agents.values():
            agent.start()

    def stop(self) -> None:
        self._stop.set()
        self._feeder.join(5)
        for agent in self.agents.values():
            agent.stop()

    def resizes(self) -> dict[str, tuple[int, int]]:
        return {n: (len(s.requested), len(s.killed)) for n, s in self.sparks.items()}


def _stored(sessions: sessionmaker[Session], job_id: str) -> list[datetime]:
    with sessions() as session:
        query = select(MetricWindow.window_end).where(MetricWindow.job_id == job_id)
        return list(session.scalars(query))


def _rounds(sessions: sessionmaker[Session]) -> list[tuple[int, datetime, str, str]]:
    with sessions() as session:
        query = select(Round.number, Round.started_at, Round.action, Round.reason)
        return [tuple(r) for r in session.execute(query.order_by(Round.number))]  # type: ignore[misc]


def _reachable(sessions: sessionmaker[Session]) -> bool:
    try:
        _rounds(sessions)
    except OperationalError:
        return False
    return True


def test_the_loop_and_the_agents_ride_out_a_registry_outage_and_lose_no_report(
    registry: ThrowawayPostgres,
) -> None:
    engine = make_engine(registry.url, pool_size=1)
    sessions = make_session_factory(engine)
    tenant: _Tenant | None = None
    try:
        with run_server(registry.url, env=LOOP) as server:
            tenant = _Tenant(server)
            ids = {name: job["id"] for name, job in tenant.jobs.items()}
            tenant.start()
            wait_for(
                "every job reporting and admitted",
                lambda: all(len(_stored(sessions, i)) >= 4 for i in ids.values()),
                60,
            )
            before = tenant.resizes()

            down_at = datetime.now(UTC)
            registry.stop()
            engine.dispose()
            time.sleep(OUTAGE_S)
            # Down: the server and the agents keep running; the agents queue their windows,
            # keep their executors and retry; no round can be stored.
            assert server.process.poll() is None
            for name, agent in tenant.agents.items():
                assert agent.running and agent.stats.reports_failed >= 3, (name, agent.stats)
                assert len(agent._pending) >= OUTAGE_S / 2, (name, len(agent._pending))
            assert tenant.resizes() == before

            registry.start()
            back_at = datetime.now(UTC)
            wait_for("the registry reachable", lambda: _reachable(sessions), 30)
            wait_for(
                "every agent's queue resent",
                lambda: not any(a._pending for a in tenant.agents.values()),  # type: ignore[union-attr]
                30,
            )
            resent_s = (datetime.now(UTC) - back_at).total_seconds()
            wait_for(
                "rounds again",
                lambda: sum(r[1] > back_at for r in _rounds(sessions)) >= 5,
                30,
            )
            tenant.stop()
            log = server.log_text()
    finally:
        if tenant is not None:
            tenant.stop()
        engine.dispose()

    # The loop lost the round lock with the registry and ran no round until it was back; the
    # stored rounds go on without a gap or a repeat.
    assert "leader.lost" in log and "leader.unreachable" in log
    rounds = _rounds(sessions)
    grace = timedelta(seconds=2)  # a round begun just before the stop could still commit
    assert not [r for r in rounds if down_at + grace < r[1] < back_at]
    numbers = [r[0] for r in rounds]
    first = min(r[1] for r in rounds if r[1] > back_at)
    print(f"after the registry returned: queues resent within {resent_s:.1f} s, first round "
          f"after {(first - back_at).total_seconds():.1f} s")  # fmt: skip
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    # Healthy jobs: nothing to do before, during or after; the executors stayed as they were.
    assert [r for r in rounds if r[2] != "none" and r[1] > down_at] == []
    assert tenant.resizes() == before
    # Nothing the API acknowledged was lost, and what was queued during the outage arrived.
    for name, agent in tenant.agents.items():
        stored = _stored(sessions, ids[name])
        assert agent.stats.reports_dropped == 0, (name, agent.stats)
        assert len(stored) == agent.stats.reports_sent, (name, len(stored), agent.stats)
        assert len(stored) == len(set(stored))
        during = [end for end in stored if down_at + grace < end < back_at]
        assert len(during) >= OUTAGE_S - 4, (name, len(during))
