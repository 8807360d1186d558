"""Run a real ``henge serve`` on a loopback port in tests.

    from tests.serving import run_server

    with run_server(database_url) as server:
        httpx.get(f"{server.url}/healthz")
        ... server.admin_token, server.process, server.log_path ...

The launch code lives in :mod:`scheduler.bench.server` (``henge bench ingest`` uses it too);
this module re-exports it for tests.
"""

from __future__ import annotations

from typing import Any

import httpx

from scheduler.bench.server import (
    ServerError,
    ServerHandle,
    free_port,
    henge_command,
    migrate,
    run_server,
)

__all__ = [
    "PAGELOAD",
    "ServerError",
    "ServerHandle",
    "free_port",
    "henge_command",
    "migrate",
    "register_job",
    "run_server",
]

PAGELOAD: dict[str, Any] = {
    "name": "pageload",
    "priority": 35,
    "slo": {"latency_ms": 500},
    "executors": {"initial": 2, "min": 1, "max": 8},
}


def register_job(server: ServerHandle, spec: dict[str, Any] = PAGELOAD) -> dict[str, Any]:
    """A tenant ``ops`` and its job ``spec`` on ``server``, as the API answered (with the
    agent token)."""
    admin = {"Authorization": f"Bearer {server.admin_token}"}
    tenant = httpx.post(f"{server.url}/v1/tenants", json={"name": "ops"}, headers=admin).json()
    created = httpx.post(f"{server.url}/v1/jobs", json=spec,
                         headers={"Authorization": f"Bearer {tenant['token']}"})  # fmt: skip
    assert created.status_code == 201, created.text
    return dict(created.json())
