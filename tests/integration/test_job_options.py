"""``GET /v1/jobs/{id}/options`` and ``henge job options``: the scheduler's model of a job as a
menu of executor counts, for its tenant only, with no numbers until the model is trusted."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from scheduler.core.decide import SchedulerState
from scheduler.core.policies.henge.model import JobModel, predicted_utility
from scheduler.core.policies.henge.product_state import ProductState
from scheduler.core.slo import meets_slo
from scheduler.registry import repository as repo
from scheduler.registry.engine import make_engine
from scheduler.registry.sql_round_store import SqlRoundTx, job_record
from scheduler.round.snapshot import job_views
from scheduler.round.store import RoundRecord
from tests.conftest import ADMIN, bearer, create_database, drop_database
from tests.integration.test_api import (
    T0,
    job_body,
    new_job,
    new_tenant,
    post_report,
    report_body,
)
from tests.integration.test_cli import henge, ok, ok_json
from tests.serving import ServerHandle, run_server

MODEL = JobModel(row_cost_s=0.0004, overhead_s=0.5, trigger_s=1.0, windows=9, last_report=None)
"""0.4 ms of a core a row: the 2,000 rows/s of the reports below need one core to keep up."""


def _job_with_reports(api: TestClient) -> tuple[dict[str, Any], dict[str, Any]]:
    tenant = new_tenant(api)
    slo = {"latency_ms": 2000, "latency_stat": "mean", "utility": {"shape": "knee"}}
    job = new_job(api, tenant["token"], slo=slo)
    for k in range(5, 0, -1):  # five 10-s windows ending at the API's clock (T0)
        answer = post_report(api, job, report_body(T0 - timedelta(seconds=10 * k)))
        assert answer.status_code == 200, answer.text
    return tenant, job


def _keep_model(session: Session, job_id: str, model: JobModel, error: float) -> None:
    """A round's record whose state holds ``model`` of the job, as the loop stores it."""
    kept = ProductState(models={job_id: model}, errors={job_id: error})
    state = SchedulerState("henge", kept).to_json()
    record = RoundRecord(1, T0, T0, "henge", "not_converged", "none", None, "r", 1.0, 2.0)
    repo.record_round(session, record, [], [], state)


def test_options_list_each_count_with_the_smallest_that_meets_the_slo(
    api: TestClient, db_session: Session
) -> None:
    tenant, job = _job_with_reports(api)
    _keep_model(db_session, job["id"], MODEL, 0.01)

    answer = api.get(f"/v1/jobs/{job['id']}/options", headers=bearer(tenant["token"]))
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["trusted"] and "9 windows" in data["reason"]
    assert data["input_rate"] == 2000.0 and data["peak"] is None
    assert data["held"] == 0  # (no round has admitted it: it holds none yet)
    counts = [o["executors"] for o in data["options"]]
    assert counts[0] == 1 and counts[-1] == 8  # min to the job's useful parallelism (8 tasks)
    assert len(counts) == len(set(counts)) == 8
    meets = {o["executors"]: o["now"]["meets_slo"] for o in data["options"]}
    marked = data["meets_now"]
    assert meets[marked] and not meets[marked - 1] and all(meets[n] for n in counts if n > marked)
    for option in data["options"]:
        assert option["core_hours_per_day"] == option["executors"] * 24.0
        assert option["peak"] is None
    assert admin_sees_the_same(api, job["id"], data)


def admin_sees_the_same(api: TestClient, job_id: str, data: dict[str, Any]) -> bool:
    answer = api.get(f"/v1/jobs/{job_id}/options", headers=ADMIN)
    return answer.status_code == 200 and answer.json() == data


def test_an_untrusted_model_gives_its_reason_and_no_numbers(
    api: TestClient, db_session: Session
) -> None:
    tenant, job = _job_with_reports(api)
    url = f"/v1/jobs/{job['id']}/options"
    first = api.get(url, headers=bearer(tenant["token"])).json()
    assert not first["trusted"] and "no model yet" in first["reason"]
    assert first["options"] == [] and first["meets_now"] is None
    _keep_model(db_session, job["id"], MODEL, 0.5)  # an error above model_max_error (0.15)
    later = api.get(url, headers=bearer(tenant["token"])).json()
    assert not later["trusted"] and "recent error, 0.500" in later["reason"]
    assert later["options"] == []


def test_another_tenant_finds_no_such_job(api: TestClient, db_session: Session) -> None:
    _, job = _job_with_reports(api)
    other = new_tenant(api, name="search")
    answer = api.get(f"/v1/jobs/{job['id']}/options", headers=bearer(other["token"]))
    assert answer.status_code == 404


def test_predictions_match_the_model(api: TestClient, db_session: Session) -> None:
    tenant, job = _job_with_reports(api)
    _keep_model(db_session, job["id"], MODEL, 0.01)
    data = api.get(f"/v1/jobs/{job['id']}/options", headers=bearer(tenant["token"])).json()
    # The API's numbers are the model's: the prediction the policy sizes the job with.
    stored = repo.visible_job(db_session, job["id"], None)
    view = job_views(SqlRoundTx(db_session), [job_record(stored)], T0, 60.0, 10.0)[0]
    for option in data["options"]:
        value = predicted_utility(MODEL, view, option["executors"], 2000.0)
        assert option["now"]["utility"] == value
        assert option["now"]["meets_slo"] == meets_slo(value, view.priority)


# ---- the CLI, against a real server ------------------------------------------------------------


@pytest.fixture
def henge_server(pg_server: str) -> Iterator[tuple[ServerHandle, str]]:
    """A real ``henge serve`` with the henge policy and no rounds, and its registry's URL."""
    url = create_database(pg_server, prefix="henge_options")
    try:
        with run_server(url, env={"HENGE_SCHEDULER_ENABLED": "false"}) as handle:
            yield handle, url
    finally:
        drop_database(pg_server, url)


def reporting_job(
    server: ServerHandle, body: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tenant and its job registered with ``body`` on ``server``, with five windows of 2,000
    rows/s ending now on the server's clock."""
    admin = {"Authorization": f"Bearer {server.admin_token}"}
    with httpx.Client(base_url=server.url, timeout=10) as http:
        tenant = http.post("/v1/tenants", json={"name": "ads"}, headers=admin).json()
        job = http.post("/v1/jobs", json=body, headers=bearer(tenant["token"])).json()
        now = datetime.now(UTC)
        for k in range(5, 0, -1):
            answer = http.post(
                f"/v1/jobs/{job['id']}/reports",
                json=report_body(now - timedelta(seconds=10 * k)),
                headers=bearer(job["agent_token"]),
            )
            assert answer.status_code == 200, answer.text
    return tenant, job


def test_the_cli_prints_the_options_as_a_table_and_as_json(
    henge_server: tuple[ServerHandle, str],
) -> None:
    server, database_url = henge_server
    slo = {"latency_ms": 2000, "latency_stat": "mean", "utility": {"shape": "knee"}}
    tenant, job = reporting_job(server, job_body(slo=slo))
    engine = make_engine(database_url, pool_size=1)
    try:
        with Session(engine) as session:
            _keep_model(session, job["id"], MODEL, 0.01)
            session.commit()
    finally:
        engine.dispose()

    as_tenant = {"url": server.url, "token": tenant["token"]}
    data = ok_json(henge("job", "options", job["id"], "--json", **as_tenant))
    assert data["trusted"] and data["input_rate"] == 2000.0
    marked = data["meets_now"]
    assert marked is not None and [o["executors"] for o in data["options"]] == list(range(1, 9))
    table = ok(henge("job", "options", job["id"], **as_tenant))
    assert "model: trusted" in table and "input now: 2,000 rows/s; no forecast ahead" in table
    assert "core-h/day" in table
    row = next(line for line in table.splitlines() if line.startswith(f"│ {marked} "))
    assert "now" in row and f"{marked * 24.0:.3g}" in row
    other = ok_json(henge("tenant", "create", "search", "--json", url=server.url,
                          token=server.admin_token))  # fmt: skip
    refused = henge("job", "options", job["id"], url=server.url, token=other["token"])
    assert (refused.returncode == 1 and "404" in refused.stderr) or "no job" in refused.stderr
