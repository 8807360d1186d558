"""Fuzzing the served API: every operation of its OpenAPI document, with cases generated from the
document (schemathesis, a dev dependency), each sent by the admin, a tenant and an agent. No
answer may be a server error or break the document's own response schema.

The test suite runs :func:`fuzz` on a real ``henge serve`` at a small count (derandomized: the
same cases every run); ``henge bench fuzz`` at a larger one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from scheduler.bench.server import DEFAULT_PG_SERVER, run_server, temporary_database

CALLERS = ("admin", "tenant", "agent")


@dataclass(frozen=True)
class FuzzResult:
    cases: int
    """Generated cases (each was sent once per kind of caller)."""
    failures: tuple[str, ...]
    """One entry per operation that failed: its label and what failed."""


def fuzz(url: str, tokens: Mapping[str, str], examples: int) -> FuzzResult:
    """Fuzz the API at ``url`` with ``examples`` cases per operation (fewer where its inputs
    allow fewer), as each caller of ``tokens`` (by :data:`CALLERS`)."""
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    from schemathesis.checks import not_a_server_error
    from schemathesis.core.failures import Failure, FailureGroup
    from schemathesis.specs.openapi.checks import response_schema_conformance

    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    checks = [not_a_server_error, response_schema_conformance]
    cases = 0
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(
            max_examples=examples,
            derandomize=True,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        @given(case=operation.as_strategy())
        def run(case: Any) -> None:
            nonlocal cases
            cases += 1
            for caller in CALLERS:  # the same request from each kind of caller
                response = case.call(headers={"Authorization": f"Bearer {tokens[caller]}"})
                case.validate_response(response, checks=checks)

        try:
            run()
        except (FailureGroup, Failure) as exc:  # reported per operation; the caller judges
            failures.append(f"{operation.label}: {exc}")
        except Exception as exc:  # a dropped connection, no case to generate, ...
            failures.append(f"{operation.label}: {type(exc).__name__}: {exc}")
    return FuzzResult(cases, tuple(failures))


@contextmanager
def fuzz_target(database_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A real ``henge serve`` (no rounds) on ``database_url`` with a tenant and one registered
    job: its URL and each kind of caller's token."""
    with run_server(database_url, env={"HENGE_SCHEDULER_ENABLED": "false"}) as server:
        admin = {"Authorization": f"Bearer {server.admin_token}"}
        with httpx.Client(base_url=server.url, timeout=10) as http:
            tenant = http.post("/v1/tenants", json={"name": "fuzz"}, headers=admin)
            tenant.raise_for_status()
            token = tenant.json()["token"]
            job = http.post(
                "/v1/jobs",
                json={"name": "fuzzed", "priority": 10, "slo": {"latency_ms": 1000}},
                headers={"Authorization": f"Bearer {token}"},
            )
            job.raise_for_status()
        tokens = {"admin": server.admin_token, "tenant": token, "agent": job.json()["agent_token"]}
        yield server.url, tokens


def measure_fuzz(examples: int, pg_server: str = DEFAULT_PG_SERVER) -> FuzzResult:
    """``henge bench fuzz``: a scratch database, a server on it, and :func:`fuzz`."""
    with temporary_database(pg_server, prefix="henge_fuzz") as url, fuzz_target(url) as target:
        return fuzz(*target, examples)
