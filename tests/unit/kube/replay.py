"""Replaying recorded Kubernetes API objects through the official client.

:func:`replay_api` gives a real ``kubernetes.client.ApiClient`` (so the official client builds
every request: paths, query strings, headers, bodies) whose HTTP transport answers from the
JSON files in ``fixtures/`` and records what was asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubernetes import client as k8s

from scheduler.kube.client import KubeApi

FIXTURES = Path(__file__).parent / "fixtures"
HOST = "https://k8s.test:6443"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


class _Response:
    def __init__(self, status: int, data: bytes) -> None:
        self.status = status
        self.reason = {
            200: "OK",
            403: "Forbidden",
            404: "Not Found",
            503: "Service Unavailable",
        }.get(status, "Error")
        self.data = data
        self.headers = {"Content-Type": "application/json", "Content-Length": str(len(data))}

    def getheaders(self) -> dict[str, str]:
        return self.headers

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)

    def read(self, *args: object) -> bytes:
        return self.data

    def release_conn(self) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass
class ReplayTransport:
    """Stands in for urllib3's PoolManager under ``ApiClient.rest_client``."""

    routes: dict[tuple[str, str], tuple[int, str]]
    requests: list[Recorded] = field(default_factory=list)

    def request(self, method: str, url: str, **kwargs: Any) -> _Response:
        parts = urlsplit(url)
        body = kwargs.get("body")
        self.requests.append(
            Recorded(
                method,
                parts.path,
                parse_qs(parts.query),
                dict(kwargs.get("headers") or {}),
                json.loads(body) if body else None,
            )
        )
        route = self.routes.get((method, parts.path))
        if route is None:
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                      "message": f"no route for {method} {parts.path}", "reason": "NotFound",
                      "code": 404}  # fmt: skip
            return _Response(404, json.dumps(status).encode())
        code, name = route
        return _Response(code, (FIXTURES / name).read_bytes())


def replay_api(routes: dict[tuple[str, str], tuple[int, str]]) -> tuple[KubeApi, ReplayTransport]:
    configuration = k8s.Configuration()
    configuration.host = HOST
    configuration.api_key = {"authorization": "Bearer test-token"}
    api_client = k8s.ApiClient(configuration)
    transport = ReplayTransport(routes)
    api_client.rest_client.pool_manager = transport
    return KubeApi(api_client), transport
