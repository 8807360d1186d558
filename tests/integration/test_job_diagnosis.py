"""``GET /v1/jobs/{id}/diagnosis`` and ``henge job diagnosis``: why a job runs as it does, from
its agent's task figures, and what the scheduler does about it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.conftest import bearer
from tests.integration.test_api import T0, job_body, new_job, new_tenant, post_report, report_body
from tests.integration.test_cli import henge, ok, ok_json
from tests.integration.test_job_options import henge_server  # noqa: F401 (a fixture)
from tests.serving import ServerHandle

SLOW = [
    {"id": "1", "host": "node-a", "tasks": 40, "task_ms": 4000},
    {"id": "2", "host": "node-b", "tasks": 10, "task_ms": 4000},  # 400 ms a task
    {"id": "3", "host": "node-a", "tasks": 40, "task_ms": 4200},
    {"id": "4", "host": "node-c", "tasks": 38, "task_ms": 3800},
]
EVEN = [{"id": str(i), "host": "node-a", "tasks": 40, "task_ms": 4000} for i in range(1, 5)]
HOT = [
    {"name": "read", "tasks": 8, "median_task_ms": 100, "max_task_ms": 110,
     "largest_partition_share": 0.125},
    {"name": "aggregate", "tasks": 8, "median_task_ms": 100, "max_task_ms": 800,
     "largest_partition_share": 0.75},
]  # fmt: skip


def job_reporting(
    api: TestClient, slo_ms: float = 2000.0, **figures: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tenant and its job with five windows ending at the API's clock (T0) carrying
    ``figures`` (``executor_tasks``, ``stages``; ``None``: left out). Their mean latency is
    1,200 ms: the job meets its SLO of ``slo_ms`` or not."""
    tenant = new_tenant(api)
    slo = {"latency_ms": slo_ms, "latency_stat": "mean"}
    job = new_job(api, tenant["token"], slo=slo)
    for k in range(5, 0, -1):
        body = report_body(T0 - timedelta(seconds=10 * k), **figures)
        answer = post_report(api, job, {k: v for k, v in body.items() if v is not None})
        assert answer.status_code == 200, answer.text
    return tenant, job


def diagnosis(api: TestClient, tenant: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    answer = api.get(f"/v1/jobs/{job['id']}/diagnosis", headers=bearer(tenant["token"]))
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_slow_executor_is_named_with_its_node_and_slowest_first(api: TestClient) -> None:
    tenant, job = job_reporting(api, executor_tasks=SLOW, stages=None)
    data = diagnosis(api, tenant, job)
    assert data["finding"] == "slow_executor"
    assert data["slow_executors"] == ["2"] and data["hosts"] == ["node-b"]
    assert data["factor"] == pytest.approx(400 / 100)
    assert data["windows"] == 5
    assert [e["id"] for e in data["executors"]] == ["2", "3", "1", "4"]
    assert data["executors"][0]["mean_task_ms"] == 400.0
    # henge's diagnose setting is off by default: it is told, not acted on
    assert not data["acted_on"] and "diagnose setting is off" in data["note"]


def test_a_job_meeting_its_slo_is_told_nothing_is_done(api: TestClient) -> None:
    settings = api.app.state.settings  # type: ignore[attr-defined]
    api.app.state.settings = settings.model_copy(  # type: ignore[attr-defined]
        update={"policy_params": {"diagnose": True}}
    )
    tenant, job = job_reporting(api, executor_tasks=SLOW, stages=None)
    data = diagnosis(api, tenant, job)
    assert data["finding"] == "slow_executor" and not data["acted_on"]
    assert data["note"] == "the job meets its SLO: nothing is done about it"


def test_with_diagnose_on_the_remedy_is_told(api: TestClient) -> None:
    settings = api.app.state.settings  # type: ignore[attr-defined]
    api.app.state.settings = settings.model_copy(  # type: ignore[attr-defined]
        update={"policy_params": {"diagnose": True}}
    )
    tenant, job = job_reporting(api, slo_ms=1000.0, executor_tasks=EVEN, stages=HOT)
    data = diagnosis(api, tenant, job)
    assert data["finding"] == "skew" and data["stage"] == "aggregate"
    assert data["factor"] == pytest.approx(6.0)
    assert "more executors will not shorten it" in data["reason"]
    assert data["acted_on"]  # (it misses its SLO)
    assert data["useful_executors"] is not None
    assert f"grown to {data['useful_executors']} executors at most" in data["note"]
    stage = data["stages"][0]
    assert stage["name"] == "aggregate" and stage["bounds_stage"]
    assert stage["unevenness"] == pytest.approx(6.0)


@pytest.mark.parametrize(
    ("realizer", "note"),
    [
        ("agent", "its slow executors are replaced"),
        ("spark-operator", "realizer cannot replace executors: it is sized as before"),
    ],
)
def test_the_remedy_for_a_slow_executor_depends_on_the_realizer(
    api: TestClient, realizer: str, note: str
) -> None:
    settings = api.app.state.settings  # type: ignore[attr-defined]
    api.app.state.settings = settings.model_copy(  # type: ignore[attr-defined]
        update={"policy_params": {"diagnose": True}, "realizer": realizer}
    )
    tenant, job = job_reporting(api, slo_ms=1000.0, executor_tasks=SLOW, stages=None)
    data = diagnosis(api, tenant, job)
    assert data["finding"] == "slow_executor" and data["acted_on"], data
    assert note in data["note"]


def test_a_job_whose_reports_carry_no_task_figures_has_no_finding(api: TestClient) -> None:
    tenant, job = job_reporting(api, executor_tasks=None, stages=None)
    data = diagnosis(api, tenant, job)
    assert data["finding"] is None and data["reason"] is None
    assert data["executors"] == [] and data["stages"] == [] and data["windows"] == 0
    assert "no task figures" in data["note"]


def test_the_cli_prints_the_diagnosis_and_the_latest_figures(
    henge_server: tuple[ServerHandle, str],  # noqa: F811
) -> None:
    server, _ = henge_server
    admin = {"Authorization": f"Bearer {server.admin_token}"}
    with httpx.Client(base_url=server.url, timeout=10) as http:
        tenant = http.post("/v1/tenants", json={"name": "ads"}, headers=admin).json()
        job = http.post("/v1/jobs", json=job_body(), headers=bearer(tenant["token"])).json()
        now = datetime.now(UTC)
        for k in range(4, 0, -1):
            body = report_body(now - timedelta(seconds=10 * k), executor_tasks=SLOW)
            answer = http.post(
                f"/v1/jobs/{job['id']}/reports", json=body, headers=bearer(job["agent_token"])
            )
            assert answer.status_code == 200, answer.text

    as_tenant = {"url": server.url, "token": tenant["token"]}
    data = ok_json(henge("job", "diagnosis", job["id"], "--json", **as_tenant))
    assert data["finding"] == "slow_executor" and data["slow_executors"] == ["2"]
    table = ok(henge("job", "diagnosis", job["id"], **as_tenant))
    assert "finding: slow_executor (slow executor 2 on node-b" in table
    assert "not acted on: henge's diagnose setting is off" in table
    row = next(line for line in table.splitlines() if line.startswith("│ 2 "))
    assert "node-b" in row and "400" in row
    assert "aggregate" in table  # (the stages table)
