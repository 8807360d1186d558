"""Run a real ``henge serve`` on a loopback port in tests.

    from tests.serving import run_server

    with run_server(database_url) as server:
        httpx.get(f"{server.url}/healthz")
        ... server.admin_token, server.process, server.log_path ...

The launch code lives in :mod:`scheduler.bench.server` (``henge bench ingest`` uses it too);
this module re-exports it for tests.
"""

from __future__ import annotations

from scheduler.bench.server import (
    ServerError,
    ServerHandle,
    free_port,
    henge_command,
    migrate,
    run_server,
)

__all__ = ["ServerError", "ServerHandle", "free_port", "henge_command", "migrate", "run_server"]
