"""``GET /v1/capacity`` and ``henge capacity``: the cores the admitted jobs' SLOs need ahead, per
tier, from the scheduler's models, against the cluster's cores or a what-if (admin only)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from scheduler.core.policies.henge.model import meets_at
from scheduler.registry import repository as repo
from scheduler.registry.engine import make_engine
from scheduler.registry.sql_round_store import SqlRoundTx, job_record
from scheduler.registry.tables import Job
from scheduler.round.snapshot import job_views
from tests.conftest import ADMIN, bearer
from tests.integration.test_api import T0, job_body, new_job, new_tenant, post_report, report_body
from tests.integration.test_cli import henge, ok, ok_json
from tests.integration.test_job_options import (  # noqa: F401
    MODEL,
    _keep_model,
    henge_server,
    reporting_job,
)
from tests.serving import ServerHandle

SLO = {"latency_ms": 2000, "latency_stat": "mean", "utility": {"shape": "knee"}}


def _admitted_job(
    api: TestClient, session: Session, token: str, priority: float, name: str
) -> dict[str, Any]:
    job = new_job(api, token, slo=SLO, priority=priority, name=name)
    for k in range(5, 0, -1):  # five 10-s windows of 2,000 rows/s ending at the API's clock
        answer = post_report(api, job, report_body(T0 - timedelta(seconds=10 * k)))
        assert answer.status_code == 200, answer.text
    _admit(session, job["id"])
    return job


def _admit(session: Session, job_id: str) -> None:
    """As a round admitting the job at two executors would leave it."""
    row = session.get(Job, job_id)
    assert row is not None
    row.status, row.target_executors = "admitted", 2
    session.flush()


def _needed(session: Session, job_id: str) -> int:
    """The smallest count the model says meets the job's SLO at its input now."""
    view = job_views(
        SqlRoundTx(session), [job_record(repo.visible_job(session, job_id, None))], T0, 60, 10
    )[0]
    return next(n for n in range(1, 9) if meets_at(MODEL, view, n, 2000.0))


def test_the_plan_sizes_each_tier_and_a_what_if_names_the_tier_that_misses(
    api: TestClient, db_session: Session
) -> None:
    tenant = new_tenant(api)
    gold = _admitted_job(api, db_session, tenant["token"], 90, "gold")
    _admitted_job(api, db_session, tenant["token"], 10, "bronze")
    new_job(api, tenant["token"], slo=SLO, name="queued")  # not admitted: not counted
    _keep_model(db_session, gold["id"], MODEL, 0.01)  # bronze has no model yet
    need = _needed(db_session, gold["id"])
    assert need > 1

    answer = api.get("/v1/capacity", headers=ADMIN)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert data["cluster_cores"] == data["capacity_cores"] == 32.0 and data["source"] == "static"
    assert data["step_s"] == 60.0 and data["horizon_s"] == 3600.0 and len(data["total"]) == 60
    jobs = {j["name"]: j for j in data["jobs"]}
    assert set(jobs) == {"gold", "bronze"}
    assert jobs["gold"]["sized"] and set(jobs["gold"]["executors"]) == {need}
    assert not jobs["bronze"]["sized"] and "no model yet" in jobs["bronze"]["note"]
    assert jobs["bronze"]["held"] == 2 and set(jobs["bronze"]["executors"]) == {2}
    assert data["peak_cores"] == need + 2 and data["fits"] and data["first_dropped"] is None
    assert [t["priority"] for t in data["tiers"]] == [90.0, 10.0]
    assert data["tiers"][0]["peak_cores"] == need and data["tiers"][0]["short_cores"] == 0

    # With only the two minimums' cores, each lacks what it needs beyond its minimum.
    small = api.get("/v1/capacity", params={"cores": 2, "horizon": 600}, headers=ADMIN).json()
    assert small["capacity_cores"] == 2.0 and len(small["total"]) == 10 and not small["fits"]
    assert small["tiers"][0]["short_cores"] == need - 1
    assert small["tiers"][0]["missing"] == [gold["id"]]
    assert small["tiers"][1]["short_cores"] == 1 and small["first_dropped"] == 10.0
    without = api.get("/v1/capacity", params={"without_nodes": 3}, headers=ADMIN).json()
    assert without["capacity_cores"] == 8.0 and without["cluster_cores"] == 32.0


def test_capacity_is_for_the_admin_and_refuses_what_it_cannot_plan(
    api: TestClient, db_session: Session
) -> None:
    tenant = new_tenant(api)
    assert api.get("/v1/capacity", headers=bearer(tenant["token"])).status_code == 403
    assert api.get("/v1/capacity").status_code == 401
    both = api.get("/v1/capacity", params={"cores": 8, "without_nodes": 1}, headers=ADMIN)
    assert both.status_code == 422
    assert both.json()["detail"][0]["loc"] == ["query", "cores"] and "not both" in both.text
    too_many = api.get("/v1/capacity", params={"without_nodes": 5}, headers=ADMIN)
    assert too_many.status_code == 409 and "4 ready nodes" in too_many.json()["detail"]
    assert api.get("/v1/capacity", params={"horizon": 0}, headers=ADMIN).status_code == 422
    empty = api.get("/v1/capacity", headers=ADMIN).json()
    assert empty["jobs"] == [] and empty["peak_cores"] == 0 and empty["fits"]


def test_the_cli_prints_the_tiers_and_the_what_if(
    henge_server: tuple[ServerHandle, str],  # noqa: F811
) -> None:
    server, database_url = henge_server
    tenant, job = reporting_job(server, job_body(slo=SLO, priority=90))
    engine = make_engine(database_url, pool_size=1)
    try:
        with Session(engine) as session:
            _keep_model(session, job["id"], MODEL, 0.01)
            _admit(session, job["id"])
            session.commit()
    finally:
        engine.dispose()

    as_admin = {"url": server.url, "token": server.admin_token}
    data = ok_json(henge("capacity", "--json", **as_admin))
    assert data["fits"] and len(data["jobs"]) == 1 and data["jobs"][0]["sized"]
    need = data["peak_cores"]
    table = ok(henge("capacity", "--cores", "1", **as_admin))
    assert "planned with 1;" in table and f"the jobs need {need} at the most" in table
    assert "the first tier to give way: priority 90" in table and job["id"] in table
    assert "every tier fits" in ok(henge("capacity", "--horizon", "600", **as_admin))
    both = henge("capacity", "--cores", "1", "--without-nodes", "1", **as_admin)
    assert both.returncode == 1 and "not both" in both.stderr
    refused = henge("capacity", url=server.url, token=tenant["token"])
    assert refused.returncode == 1 and "403" in refused.stderr
