"""The registry going away under a running ``henge serve``: a throw-away Postgres server of the
test's own (``initdb`` / ``pg_ctl`` on a temporary directory) is stopped and started again.

While it is down the API answers 503 with ``Retry-After`` at once instead of hanging or failing
with a 500, ``/readyz`` is unready, and the server keeps running; when it is back, everything
answers again without a restart.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

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
