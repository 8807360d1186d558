"""Run a real ``henge serve`` subprocess on loopback, for tests and benchmarks.

One piece of code for both: ``tests/serving.py`` re-exports :func:`run_server`, and
``henge bench ingest`` uses it when no ``--url`` is given. Also throw-away Postgres databases.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import httpx

READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
LOG_TAIL_CHARS = 4000


class ServerError(RuntimeError):
    """The server could not be migrated or started; the message carries its log's tail."""


@dataclass
class ServerHandle:
    url: str
    admin_token: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def henge_command() -> list[str]:
    """The ``henge`` executable of this interpreter's environment (the venv's), else a fallback
    that runs the same entry point through this interpreter."""
    exe = Path(sys.executable).parent / ("henge.exe" if os.name == "nt" else "henge")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-c", "from scheduler.cli import main; main()"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= LOG_TAIL_CHARS else "..." + text[-LOG_TAIL_CHARS:]


def migrate(database_url: str, env: dict[str, str] | None = None) -> None:
    """``henge migrate --database-url URL``; raises ServerError with its output on failure."""
    result = subprocess.run(
        [*henge_command(), "migrate", "--database-url", database_url],
        env={**os.environ, "HENGE_LOG_FORMAT": "json", **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        output = _tail(result.stderr + result.stdout)
        raise ServerError(f"henge migrate failed (exit {result.returncode}):\n{output}")


def _stop(process: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
    if process.poll() is not None:
        return
    with suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            process.kill()
        process.wait(timeout=grace_s)


def _wait_ready(handle: ServerHandle, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    with httpx.Client(base_url=handle.url, timeout=2.0) as client:
        while True:
            code = handle.process.poll()
            if code is not None:
                raise ServerError(
                    f"henge serve exited with code {code} before it was ready:\n"
                    f"{_tail(handle.log_text())}"
                )
            try:
                response = client.get("/readyz")
                if response.status_code == 200:
                    return
                last = f"HTTP {response.status_code}: {response.text[:200]}"
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            if time.monotonic() > deadline:
                raise ServerError(
                    f"henge serve was not ready at {handle.url}/readyz after {timeout_s:.0f} s "
                    f"(last: {last}):\n{_tail(handle.log_text())}"
                )
            time.sleep(0.1)


def _address_in_use(log: str) -> bool:
    return "address already in use" in log.lower() or "errno 98" in log.lower()


@contextmanager
def run_server(
    database_url: str,
    *,
    env: dict[str, str] | None = None,
    port: int | None = None,
    migrate_first: bool = True,
    args: Sequence[str] = (),
    ready_timeout_s: float = READY_TIMEOUT_S,
    keep_log: bool = False,
) -> Iterator[ServerHandle]:
    """Migrate ``database_url``, start ``henge serve`` on 127.0.0.1 and yield once /readyz says
    200. Stops it on exit (SIGTERM, then SIGKILL after 10 s). ``env`` overrides the settings
    given here (HENGE_ADMIN_TOKEN, HENGE_LOG_FORMAT, ...); ``args`` are extra ``serve`` flags.
    The server's output goes to a temporary log file, removed on exit unless ``keep_log``.
    """
    if migrate_first:
        migrate(database_url, env)
    # A free port can be taken between our probe and the server's bind: retry a few times.
    attempts = 1 if port is not None else 3
    for attempt in range(attempts):
        chosen = port if port is not None else free_port()
        admin_token = "adm_" + secrets.token_urlsafe(24)
        child_env = {
            **os.environ,
            "HENGE_DATABASE_URL": database_url,
            "HENGE_ADMIN_TOKEN": admin_token,
            "HENGE_HOST": "127.0.0.1",
            "HENGE_PORT": str(chosen),
            "HENGE_LOG_FORMAT": "json",
            **(env or {}),
        }
        admin_token = child_env["HENGE_ADMIN_TOKEN"]
        fd, name = tempfile.mkstemp(prefix="henge-serve-", suffix=".log")
        log_path = Path(name)
        with os.fdopen(fd, "wb") as log_file:
            process = subprocess.Popen(
                [*henge_command(), "serve", *args],
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        handle = ServerHandle(f"http://127.0.0.1:{chosen}", admin_token, process, log_path)
        try:
            try:
                _wait_ready(handle, ready_timeout_s)
            except ServerError:
                _stop(process)
                if attempt + 1 < attempts and _address_in_use(handle.log_text()):
                    log_path.unlink(missing_ok=True)
                    continue
                raise
            yield handle
            return
        finally:
            _stop(process)
            if not keep_log:
                log_path.unlink(missing_ok=True)


# ---- throw-away Postgres databases -----------------------------------------------------------

DEFAULT_PG_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def _libpq(url: str) -> str:
    from sqlalchemy import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def create_database(server_url: str = DEFAULT_PG_SERVER, prefix: str = "henge_bench") -> str:
    """A new empty database on the server of ``server_url``; returns its SQLAlchemy URL."""
    import psycopg
    from sqlalchemy import make_url

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_libpq(server_url), autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(server_url: str, url: str) -> None:
    import psycopg
    from sqlalchemy import make_url

    name = make_url(url).database
    with psycopg.connect(_libpq(server_url), autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def temporary_database(
    server_url: str = DEFAULT_PG_SERVER, prefix: str = "henge_bench"
) -> Iterator[str]:
    url = create_database(server_url, prefix)
    try:
        yield url
    finally:
        drop_database(server_url, url)
