"""The /v1 API against real Postgres: tokens, validation, isolation, reports, history, rounds."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, text
from sqlalchemy.orm import Session

from scheduler.core.report import report_from_document
from scheduler.registry import repository as repo
from scheduler.registry.tables import Action, Allocation, Job, MetricWindow, Round, Tenant
from scheduler.round.store import ActionRecord, AllocationRecord, RoundRecord
from tests.conftest import ADMIN, bearer

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def job_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "pageload",
        "priority": 35,
        "slo": {
            "latency_ms": 60,
            "latency_stat": "mean",
            "juice": 1.0,
            "utility": {"shape": "knee"},
        },
        "executors": {"initial": 2, "min": 1, "max": 40, "cores": 1, "memory_mb": 2048},
        "actuator": "agent",
    }
    body.update(overrides)
    return body


def report_body(start: datetime = T0, seconds: int = 10, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "window_start": start.isoformat(),
        "window_end": (start + timedelta(seconds=seconds)).isoformat(),
        "executors": 4,
        "cores_per_executor": 1,
        "busy_core_ms": 23000,
        "max_parallelism": 8,
        "sources": [
            {"name": "events", "arrived_rows": 20000, "processed_rows": 19000, "backlog_rows": 3000}
        ],
        "batches": [
            {
                "start": start.isoformat(),
                "end": (start + timedelta(seconds=4)).isoformat(),
                "rows": 9500,
            }
        ],
        "latency_ms": {"mean": 1200, "p95": 1800, "p99": 2100},
        "edges": [{"parent": "src", "child": "filter", "sent": 20000, "executed": 19000}],
        "executor_tasks": [
            {"id": "1", "host": "node-a", "tasks": 40, "task_ms": 11000, "rows": 9000},
            {"id": "2", "tasks": 35, "task_ms": 12000},
        ],
        "stages": [
            {
                "name": "aggregate",
                "runs": 2,
                "tasks": 8,
                "median_task_ms": 120,
                "max_task_ms": 480,
                "largest_partition_share": 0.4,
            }
        ],
    }
    body.update(overrides)
    return body


def new_tenant(api: TestClient, name: str = "ads") -> dict[str, Any]:
    response = api.post("/v1/tenants", json={"name": name}, headers=ADMIN)
    assert response.status_code == 201, response.text
    return response.json()


def new_job(api: TestClient, tenant_token: str, **overrides: Any) -> dict[str, Any]:
    response = api.post("/v1/jobs", json=job_body(**overrides), headers=bearer(tenant_token))
    assert response.status_code == 201, response.text
    return response.json()


def count(session: Session, table: type) -> int:
    return session.scalar(select(func.count()).select_from(table)) or 0


# ---- tenants ---------------------------------------------------------------------------------


def test_admin_creates_tenant_and_token_is_stored_hashed(api: TestClient, db_session: Session):
    created = new_tenant(api)
    assert created["name"] == "ads" and created["token"].startswith("hgt_")
    stored = db_session.get(Tenant, created["id"])
    assert stored is not None and stored.token_hash != created["token"]
    assert created["token"] not in json.dumps(api.get("/v1/tenants", headers=ADMIN).json())


def test_only_admin_creates_tenants(api: TestClient, db_session: Session):
    tenant = new_tenant(api)
    assert api.post("/v1/tenants", json={"name": "x"}).status_code == 401
    assert (
        api.post("/v1/tenants", json={"name": "x"}, headers=bearer(tenant["token"])).status_code
        == 403
    )
    assert api.get("/v1/tenants", headers=bearer(tenant["token"])).status_code == 403
    assert count(db_session, Tenant) == 1


def test_duplicate_tenant_name_is_a_conflict(api: TestClient):
    new_tenant(api)
    response = api.post("/v1/tenants", json={"name": "ads"}, headers=ADMIN)
    assert response.status_code == 409
    assert response.json()["detail"][0]["loc"] == ["body", "name"]


def test_unknown_token_is_401(api: TestClient):
    response = api.get("/v1/jobs", headers=bearer("hgt_not-a-real-token"))
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


# ---- job registration ------------------------------------------------------------------------


def test_register_job_returns_agent_token_and_queues_it(api: TestClient, db_session: Session):
    tenant = new_tenant(api)
    job = new_job(api, tenant["token"])
    assert job["agent_token"].startswith("hga_")
    assert job["status"] == "queued" and job["executors"]["target"] == 0
    assert job["slo"]["latency_ms"] == 60
    row = db_session.get(Job, job["id"])
    assert row is not None and row.agent_token_hash != job["agent_token"]


INVALID_JOBS = [
    ("juice zero", {"slo": {"juice": 0}}, ["slo", "juice"]),
    ("juice above one", {"slo": {"juice": 1.5}}, ["slo", "juice"]),
    ("latency zero", {"slo": {"latency_ms": 0}}, ["slo", "latency_ms"]),
    ("latency negative", {"slo": {"latency_ms": -5}}, ["slo", "latency_ms"]),
    ("no objective", {"slo": {"latency_stat": "mean"}}, ["slo"]),
    ("priority zero", {"priority": 0}, ["priority"]),
    ("priority negative", {"priority": -1}, ["priority"]),
    ("min above max", {"executors": {"initial": 2, "min": 5, "max": 3}}, ["executors", "max"]),
    (
        "initial above max",
        {"executors": {"initial": 9, "min": 1, "max": 3}},
        ["executors", "initial"],
    ),
    (
        "initial below min",
        {"executors": {"initial": 1, "min": 2, "max": 3}},
        ["executors", "initial"],
    ),
    (
        "unknown shape",
        {"slo": {"juice": 1, "utility": {"shape": "cubic"}}},
        ["slo", "utility", "shape"],
    ),
    (
        "non-monotone juice points",
        {
            "slo": {
                "juice": 1,
                "utility": {
                    "shape": "piecewise",
                    "juice_points": [[0, 0], [0.5, 0.8], [0.8, 0.3], [1, 1]],
                },
            }
        },
        ["slo", "utility", "juice_points"],
    ),
    (
        "non-monotone latency points",
        {
            "slo": {
                "latency_ms": 100,
                "utility": {
                    "shape": "piecewise",
                    "latency_points": [[100, 1], [200, 0.2], [300, 0.6]],
                },
            }
        },
        ["slo", "utility", "latency_points"],
    ),
    ("unknown top-level field", {"colour": "red"}, ["colour"]),
    ("unknown slo field", {"slo": {"juice": 1, "throughput": 5}}, ["slo", "throughput"]),
    ("unknown executors field", {"executors": {"initial": 1, "gpus": 1}}, ["executors", "gpus"]),
    ("bad name", {"name": "no spaces allowed"}, ["name"]),
    ("unknown actuator", {"actuator": "yarn"}, ["actuator"]),
]


@pytest.mark.parametrize(("case", "change", "loc"), INVALID_JOBS, ids=[c[0] for c in INVALID_JOBS])
def test_invalid_job_is_422_naming_the_field_and_stores_nothing(
    api: TestClient, db_session: Session, case: str, change: dict[str, Any], loc: list[str]
):
    tenant = new_tenant(api)
    response = api.post("/v1/jobs", json=job_body(**change), headers=bearer(tenant["token"]))
    assert response.status_code == 422, (case, response.text)
    locs = [error["loc"][1:] for error in response.json()["detail"]]
    assert loc in locs, (case, locs)
    assert count(db_session, Job) == 0


def test_piecewise_shape_that_is_monotone_is_accepted(api: TestClient):
    tenant = new_tenant(api)
    job = new_job(
        api,
        tenant["token"],
        slo={
            "juice": 0.9,
            "utility": {"shape": "piecewise", "juice_points": [[0.5, 0.0], [0.9, 1.0]]},
        },
    )
    assert job["slo"]["utility"]["juice_points"] == [[0.5, 0.0], [0.9, 1.0]]


def test_job_name_unique_per_tenant_but_free_after_removal(api: TestClient):
    a, b = new_tenant(api, "a"), new_tenant(api, "b")
    first = new_job(api, a["token"])
    new_job(api, b["token"])  # another tenant may use the same name
    clash = api.post("/v1/jobs", json=job_body(), headers=bearer(a["token"]))
    assert clash.status_code == 409
    assert api.delete(f"/v1/jobs/{first['id']}", headers=bearer(a["token"])).status_code == 204
    new_job(api, a["token"])


def test_admin_cannot_register_jobs_without_a_tenant(api: TestClient):
    assert api.post("/v1/jobs", json=job_body(), headers=ADMIN).status_code == 403


# ---- reading, changing, removing jobs --------------------------------------------------------


def test_tenants_never_see_each_others_jobs(api: TestClient):
    a, b = new_tenant(api, "a"), new_tenant(api, "b")
    job = new_job(api, a["token"])
    other = bearer(b["token"])
    assert api.get("/v1/jobs", headers=other).json() == []
    for method, path in [("GET", ""), ("PATCH", ""), ("DELETE", ""), ("GET", "/history")]:
        kwargs: dict[str, Any] = {"json": {"priority": 1}} if method == "PATCH" else {}
        response = api.request(method, f"/v1/jobs/{job['id']}{path}", headers=other, **kwargs)
        assert response.status_code == 404, (method, path)
    assert api.get(f"/v1/jobs/{job['id']}", headers=bearer(a["token"])).status_code == 200
    assert {j["id"] for j in api.get("/v1/jobs", headers=ADMIN).json()} == {job["id"]}


def test_patch_changes_slo_and_bounds_with_the_same_validation(api: TestClient):
    tenant = new_tenant(api)
    job = new_job(api, tenant["token"])
    auth = bearer(tenant["token"])
    changed = api.patch(
        f"/v1/jobs/{job['id']}", headers=auth, json={"priority": 50, "slo": {"juice": 0.9}}
    )
    assert changed.status_code == 200
    assert changed.json()["priority"] == 50 and changed.json()["slo"] == {
        "juice": 0.9,
        "latency_stat": "mean",
        "utility": {"shape": "knee"},
    }
    bad = api.patch(
        f"/v1/jobs/{job['id']}",
        headers=auth,
        json={"executors": {"initial": 1, "min": 3, "max": 2}},
    )
    assert bad.status_code == 422
    assert api.get(f"/v1/jobs/{job['id']}", headers=auth).json()["executors"]["max"] == 40


def test_deleted_job_is_gone(api: TestClient):
    tenant = new_tenant(api)
    job = new_job(api, tenant["token"])
    auth = bearer(tenant["token"])
    assert api.delete(f"/v1/jobs/{job['id']}", headers=auth).status_code == 204
    assert api.get(f"/v1/jobs/{job['id']}", headers=auth).status_code == 404
    # Its agent token went with it: unknown, like any other.
    report = api.post(
        f"/v1/jobs/{job['id']}/reports", json=report_body(), headers=bearer(job["agent_token"])
    )
    assert report.status_code == 401


# ---- token kinds -----------------------------------------------------------------------------


def test_tenant_cannot_post_reports_and_agent_cannot_read_jobs(
    api: TestClient, db_session: Session
):
    tenant = new_tenant(api)
    job = new_job(api, tenant["token"])
    path = f"/v1/jobs/{job['id']}/reports"
    assert api.post(path, json=report_body(), headers=bearer(tenant["token"])).status_code == 403
    assert api.post(path, json=report_body(), headers=ADMIN).status_code == 403
    agent = bearer(job["agent_token"])
    assert api.get("/v1/jobs", headers=agent).status_code == 403
    assert api.get(f"/v1/jobs/{job['id']}", headers=agent).status_code == 403
    assert api.get("/v1/rounds", headers=agent).status_code == 403
    assert count(db_session, MetricWindow) == 0


# ---- reports ---------------------------------------------------------------------------------


@pytest.fixture
def agent_job(api: TestClient) -> dict[str, Any]:
    tenant = new_tenant(api)
    return new_job(api, tenant["token"])


def post_report(api: TestClient, job: dict[str, Any], body: Any, **kwargs: Any):
    return api.post(
        f"/v1/jobs/{job['id']}/reports", json=body, headers=bearer(job["agent_token"]), **kwargs
    )


def test_report_is_stored_and_answered_with_the_target(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
):
    response = post_report(api, agent_job, report_body())
    assert response.status_code == 200, response.text
    assert response.json() == {
        "target_executors": 0,
        "round": 0,
        "duplicate": False,
        "replace_executors": [],
    }
    stored = db_session.scalars(select(MetricWindow)).one()
    assert stored.executors == 4 and stored.report["busy_core_ms"] == 23000
    decoded = report_from_document(stored.report)
    assert [(e.id, e.host, e.mean_task_ms) for e in decoded.executor_tasks] == [
        ("1", "node-a", 275.0),
        ("2", None, pytest.approx(342.857, rel=1e-4)),
    ]
    assert decoded.stages[0].largest_partition_share == 0.4 and decoded.stages[0].runs == 2


def test_duplicate_window_is_idempotent(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
):
    first = post_report(api, agent_job, report_body())
    again = post_report(api, agent_job, report_body())
    assert first.status_code == again.status_code == 200
    assert again.json()["duplicate"] is True
    assert count(db_session, MetricWindow) == 1


def test_older_duplicate_is_still_idempotent(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
):
    post_report(api, agent_job, report_body(T0))
    post_report(api, agent_job, report_body(T0 + timedelta(seconds=10)))
    assert post_report(api, agent_job, report_body(T0)).json()["duplicate"] is True
    assert count(db_session, MetricWindow) == 2


def _with_source(**fields: Any) -> dict[str, Any]:
    source = {"name": "events", "arrived_rows": 10, "processed_rows": 10} | fields
    return report_body(sources=[source])


BAD_REPORTS = [
    (
        "end before start",
        report_body(window_end=(T0 - timedelta(seconds=1)).isoformat()),
        422,
        "window_end",
    ),
    ("end equals start", report_body(window_end=T0.isoformat()), 422, "window_end"),
    ("negative busy time", report_body(busy_core_ms=-1), 422, "busy_core_ms"),
    ("negative executors", report_body(executors=-2), 422, "executors"),
    ("negative rows", _with_source(processed_rows=-5), 422, "processed_rows"),
    ("negative backlog", _with_source(backlog_rows=-5), 422, "backlog_rows"),
    (
        "negative edge count",
        report_body(edges=[{"parent": "a", "child": "b", "sent": -1, "executed": 0}]),
        422,
        "sent",
    ),
    (
        "missing busy time",
        {k: v for k, v in report_body().items() if k != "busy_core_ms"},
        422,
        "busy_core_ms",
    ),
    ("naive window time", report_body(window_start="2026-01-01T12:00:00"), 422, "window_start"),
    ("unknown field", report_body(busy_core_msec=1), 422, "busy_core_msec"),
    ("unknown source field", _with_source(procesed_rows=10), 422, "procesed_rows"),
]


@pytest.mark.parametrize(
    ("case", "body", "code", "field"), BAD_REPORTS, ids=[c[0] for c in BAD_REPORTS]
)
def test_bad_report_is_refused_naming_the_field_and_nothing_stored(
    api: TestClient,
    agent_job: dict[str, Any],
    db_session: Session,
    case: str,
    body: dict[str, Any],
    code: int,
    field: str,
):
    response = post_report(api, agent_job, body)
    assert response.status_code == code, (case, response.text)
    assert field in json.dumps(response.json()), case
    assert count(db_session, MetricWindow) == 0


def _numeric_paths(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Where a report holds a number (every numeric field the agent sends)."""
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _numeric_paths(item, (*path, key))]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _numeric_paths(item, (*path, i))]
    return [path] if isinstance(value, int | float) and not isinstance(value, bool) else []


NUMERIC_PATHS = _numeric_paths(report_body())
# JSON literals: NaN and the infinities are not JSON, but Python's parser (and so the API's)
# reads them; the others are out of every field's range.
BAD_NUMBERS = ["NaN", "Infinity", "-Infinity", "-1", "1e300"]


def _with_literal(path: tuple[str | int, ...], literal: str) -> str:
    body = report_body()
    marker = "__bad_number__"
    parent: Any = body
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = marker
    return json.dumps(body).replace(f'"{marker}"', literal)


def test_every_numeric_report_field_is_covered() -> None:
    leaves = {str(p[-1]) for p in NUMERIC_PATHS}
    assert leaves >= {
        "executors", "cores_per_executor", "busy_core_ms", "max_parallelism", "arrived_rows",
        "processed_rows", "backlog_rows", "rows", "mean", "p95", "p99", "sent", "executed",
        "tasks", "task_ms", "median_task_ms", "max_task_ms", "runs", "largest_partition_share",
    }  # fmt: skip


@pytest.mark.parametrize("literal", BAD_NUMBERS)
@pytest.mark.parametrize("path", NUMERIC_PATHS, ids=lambda p: ".".join(map(str, p)))
def test_a_bad_number_in_any_field_is_refused_naming_it_and_nothing_is_stored(
    api: TestClient,
    agent_job: dict[str, Any],
    db_session: Session,
    path: tuple[str | int, ...],
    literal: str,
):
    response = api.post(
        f"/v1/jobs/{agent_job['id']}/reports",
        content=_with_literal(path, literal),
        headers={**bearer(agent_job["agent_token"]), "Content-Type": "application/json"},
    )
    assert response.status_code == 422, response.text
    located = [tuple(e["loc"]) for e in response.json()["detail"]]
    assert any(loc[-len(path) :] == path for loc in located), located
    assert count(db_session, MetricWindow) == 0


def test_out_of_order_report_is_409(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
):
    assert post_report(api, agent_job, report_body(T0 + timedelta(seconds=10))).status_code == 200
    late = post_report(api, agent_job, report_body(T0))
    assert late.status_code == 409
    assert late.json()["detail"][0]["loc"] == ["body", "window_end"]
    assert count(db_session, MetricWindow) == 1


def test_report_for_unknown_or_other_job_is_404(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
):
    tenant = new_tenant(api, "other")
    other = new_job(api, tenant["token"], name="other")
    # This agent's token is only good for its own job.
    wrong = api.post(
        f"/v1/jobs/{other['id']}/reports",
        json=report_body(),
        headers=bearer(agent_job["agent_token"]),
    )
    assert wrong.status_code == 404
    missing = api.post(
        "/v1/jobs/00000000-0000-0000-0000-000000000000/reports",
        json=report_body(),
        headers=bearer(agent_job["agent_token"]),
    )
    assert missing.status_code == 404
    assert (
        post_report(
            api,
            agent_job,
            report_body(),
        ).status_code
        == 200
    )
    assert count(db_session, MetricWindow) == 1


def test_wrong_agent_token_is_401(api: TestClient, agent_job: dict[str, Any], db_session: Session):
    response = api.post(
        f"/v1/jobs/{agent_job['id']}/reports", json=report_body(), headers=bearer("hga_forged")
    )
    assert response.status_code == 401
    assert count(db_session, MetricWindow) == 0


def test_oversized_report_is_413(api: TestClient, agent_job: dict[str, Any], db_session: Session):
    sources = [{"name": f"source-{i:05d}-" + "x" * 100, "processed_rows": 1} for i in range(900)]
    response = post_report(api, agent_job, report_body(sources=sources))
    assert response.status_code == 413
    assert count(db_session, MetricWindow) == 0


# ---- history and rounds ----------------------------------------------------------------------


def test_history_filters_by_since_until_and_limit(api: TestClient, agent_job: dict[str, Any]):
    for i in range(6):
        assert (
            post_report(api, agent_job, report_body(T0 + timedelta(seconds=10 * i))).status_code
            == 200
        )
    path = f"/v1/jobs/{agent_job['id']}/history"
    auth = {"headers": ADMIN}
    every = api.get(path, **auth).json()["points"]
    assert len(every) == 6
    assert [p["window_end"] for p in every] == sorted(p["window_end"] for p in every)
    since = (T0 + timedelta(seconds=30)).isoformat()
    until = (T0 + timedelta(seconds=50)).isoformat()
    window = api.get(path, params={"since": since, "until": until}, **auth).json()["points"]
    assert [p["window_end"][:19] for p in window] == ["2026-01-01T12:00:40", "2026-01-01T12:00:50"]
    newest = api.get(path, params={"limit": 2}, **auth).json()["points"]
    assert [p["window_end"][:19] for p in newest] == ["2026-01-01T12:00:50", "2026-01-01T12:01:00"]
    assert api.get(path, params={"limit": 0}, **auth).status_code == 422


def _round(number: int, at: datetime, job_id: str) -> Round:
    return Round(
        number=number,
        started_at=at,
        finished_at=at + timedelta(milliseconds=5),
        policy="henge",
        state="not_converged",
        action="reconfigure",
        job_id=job_id,
        reason="missing SLO",
        total_utility=10.0 + number,
        max_utility=35.0,
    )


def test_rounds_are_listed_newest_first_with_actions_and_filters(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
):
    for n in range(1, 6):
        row = _round(n, T0 + timedelta(seconds=10 * n), agent_job["id"])
        db_session.add(row)
        db_session.flush()
        db_session.add(
            Action(
                round_id=row.id,
                kind="reconfigure",
                job_id=agent_job["id"],
                from_executors=n,
                to_executors=n + 1,
                reason="capacity 0.9",
            )
        )
    db_session.flush()
    rounds = api.get("/v1/rounds", headers=ADMIN).json()
    assert [r["number"] for r in rounds] == [5, 4, 3, 2, 1]
    assert rounds[0]["actions"] == [
        {
            "kind": "reconfigure",
            "job_id": agent_job["id"],
            "from_executors": 5,
            "to_executors": 6,
            "reason": "capacity 0.9",
        }
    ]
    limited = api.get("/v1/rounds", params={"limit": 2}, headers=ADMIN).json()
    assert [r["number"] for r in limited] == [5, 4]
    ranged = api.get(
        "/v1/rounds",
        headers=ADMIN,
        params={
            "since": (T0 + timedelta(seconds=20)).isoformat(),
            "until": (T0 + timedelta(seconds=40)).isoformat(),
        },
    ).json()
    assert [r["number"] for r in ranged] == [4, 3, 2]
    tenant_token = new_tenant(api, "curious")["token"]
    assert api.get("/v1/rounds", headers=bearer(tenant_token)).status_code == 403


def test_cluster_summary_counts_capacity_and_jobs(api: TestClient, agent_job: dict[str, Any]):
    summary = api.get("/v1/cluster", headers=ADMIN).json()
    assert summary["total_cores"] == 32 and summary["free_cores"] == 32
    assert summary["jobs"] == {"queued": 1}


def test_health_and_readiness(api: TestClient):
    assert api.get("/healthz").json() == {"status": "ok"}
    ready = api.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert api.get("/openapi.json").json()["info"]["title"] == "Henge for Spark"


def test_ingestion_stores_utility_juice_latency_and_capacity(
    api: TestClient, agent_job: dict[str, Any]
):
    assert post_report(api, agent_job, report_body()).status_code == 200
    point = api.get(f"/v1/jobs/{agent_job['id']}/history", headers=ADMIN).json()["points"][0]
    # Edges: filter executed 19,000 of the 20,000 rows sent, so juice is 0.95.
    assert point["juice"] == pytest.approx(0.95)
    # The agent's exact mean latency is used: 60 ms threshold / 1,200 ms = 0.05 of the priority.
    assert point["latency_ms"] == pytest.approx(1200)
    # Hybrid SLO: the average of the two fractions, times priority 35.
    assert point["utility"] == pytest.approx(35 * (0.95 + 0.05) / 2)
    # 23 busy core-seconds over 10 s on 4 cores.
    assert point["capacity"] == pytest.approx(0.575)
    assert point["input_rate"] == pytest.approx(2000)
    shown = api.get(f"/v1/jobs/{agent_job['id']}", headers=ADMIN).json()
    assert shown["utility"] == pytest.approx(17.5) and shown["juice"] == pytest.approx(0.95)


def test_retention_purges_only_windows_older_than_the_cutoff(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
):
    for i in range(4):
        post_report(api, agent_job, report_body(T0 + timedelta(days=i)))
    cutoff = repo.retention_cutoff(T0 + timedelta(days=3, seconds=10), days=1.5)
    assert repo.purge_windows(db_session, cutoff) == 2
    left = db_session.scalars(select(MetricWindow.window_end).order_by(MetricWindow.window_end))
    assert [w.day for w in left] == [3, 4]


def test_space_of_purged_rows_is_reclaimed_at_once(pg_engine: Engine):
    # Autovacuum may be off (it is on the test machine): the purge vacuums what it emptied.
    repo.reclaim_purged_space(pg_engine)
    with pg_engine.connect() as connection:
        vacuumed = connection.execute(
            text("SELECT relname FROM pg_stat_user_tables WHERE last_vacuum IS NOT NULL")
        ).scalars()
        assert set(repo.PURGED_TABLES) <= set(vacuumed)


def test_retention_purges_old_rounds_with_their_actions_and_allocations(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
):
    for number in (1, 2):
        at = T0 + timedelta(days=number)
        record = RoundRecord(number, at, at, "henge", "not_converged", "reconfigure", None,
                             "r", 1.0, 2.0)  # fmt: skip
        action = ActionRecord("reconfigure", agent_job["id"], 1, 2, "grow")
        allocation = AllocationRecord(agent_job["id"], 2, 1.0)
        repo.record_round(db_session, record, [action], [allocation], {"n": number})
    assert repo.purge_rounds(db_session, T0 + timedelta(days=1, hours=12)) == 1
    db_session.expire_all()
    assert [r.number for r in db_session.scalars(select(Round))] == [2]
    assert count(db_session, Action) == 1 and count(db_session, Allocation) == 1
    assert repo.current_round_number(db_session) == 2  # the counter does not go back
