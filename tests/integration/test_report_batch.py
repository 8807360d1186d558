"""``POST /v1/jobs/{id}/reports/batch``: several windows in one request, a result per window,
on real Postgres; and the registry's one-statement insert when another request got there first."""

from __future__ import annotations

import math
from collections import deque
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from scheduler.api.schemas import MAX_BATCH_WINDOWS
from scheduler.registry import repository as repo
from scheduler.registry.tables import MetricWindow
from scheduler.sim.memory_round_store import MemoryRoundStore, MemoryRoundTx
from tests.conftest import bearer
from tests.integration.test_api import T0, new_job, new_tenant, report_body


@pytest.fixture
def agent_job(api: TestClient) -> dict[str, Any]:
    return new_job(api, new_tenant(api)["token"])


def post_batch(api: TestClient, job: dict[str, Any], reports: list[Any]) -> Any:
    return api.post(
        f"/v1/jobs/{job['id']}/reports/batch",
        json={"reports": reports},
        headers=bearer(job["agent_token"]),
    )


def window(k: int) -> dict[str, Any]:
    return report_body(T0 + timedelta(seconds=10 * k))


def stored_ends(session: Session) -> list[str]:
    ends = session.scalars(select(MetricWindow.window_end).order_by(MetricWindow.window_end))
    return [end.isoformat() for end in ends]


def test_a_batch_stores_each_window_in_order_with_its_derived_values(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
) -> None:
    response = post_batch(api, agent_job, [window(0), window(1), window(2)])
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["target_executors"] == 0 and answer["round"] == 0
    assert [r["status"] for r in answer["results"]] == ["stored"] * 3
    assert stored_ends(db_session) == [(T0 + timedelta(seconds=10 * k + 10)).isoformat()
                                       for k in range(3)]  # fmt: skip
    rows = db_session.scalars(select(MetricWindow).order_by(MetricWindow.window_end)).all()
    # The same derived values as the single route stores (utility, rates…).
    single = new_job(api, new_tenant(api, "other")["token"])
    for k in range(3):
        api.post(f"/v1/jobs/{single['id']}/reports", json=window(k),
                 headers=bearer(single["agent_token"]))  # fmt: skip
    alone = db_session.scalars(
        select(MetricWindow)
        .where(MetricWindow.job_id == single["id"])
        .order_by(MetricWindow.window_end)
    ).all()
    for a, b in zip(rows, alone, strict=True):
        assert (a.utility, a.juice, a.latency_ms, a.input_rate, a.processed_rate) == (
            b.utility, b.juice, b.latency_ms, b.input_rate, b.processed_rate,
        )  # fmt: skip
        assert a.input_rate is not None


def test_a_bad_window_is_refused_naming_its_field_and_the_others_are_stored(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
) -> None:
    bad = window(1) | {"busy_core_ms": float("-1")}
    response = post_batch(api, agent_job, [window(0), bad, window(2)])
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["stored", "rejected", "stored"]
    assert results[1]["detail"][0]["loc"] == ["body", "reports", 1, "busy_core_ms"]
    assert len(stored_ends(db_session)) == 2


def test_resending_a_batch_is_idempotent_and_an_older_window_is_refused(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
) -> None:
    post_batch(api, agent_job, [window(0), window(1), window(2)])
    again = post_batch(api, agent_job, [window(1), window(2), window(3)]).json()["results"]
    assert [r["status"] for r in again] == ["duplicate", "duplicate", "stored"]
    # Ends before the newest stored window but is not one of them: out of order.
    shifted = report_body(T0 + timedelta(seconds=5))
    late = post_batch(api, agent_job, [shifted]).json()["results"][0]
    assert late["status"] == "rejected"
    assert late["detail"][0]["loc"] == ["body", "reports", 0, "window_end"]
    # The same window twice in one request is stored once.
    twice = post_batch(api, agent_job, [window(4), window(4)]).json()["results"]
    assert [r["status"] for r in twice] == ["stored", "duplicate"]
    assert len(stored_ends(db_session)) == 5


def test_batch_limits_and_access(api: TestClient, agent_job: dict[str, Any]) -> None:
    assert post_batch(api, agent_job, []).status_code == 422
    path = f"/v1/jobs/{agent_job['id']}/reports/batch"
    unknown = api.post(path, json={"reports": [window(0)], "colour": "red"},
                       headers=bearer(agent_job["agent_token"]))  # fmt: skip
    assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"] == ["body", "colour"]
    too_many = [window(k) for k in range(MAX_BATCH_WINDOWS + 1)]
    assert post_batch(api, agent_job, too_many).status_code in (413, 422)
    other = new_job(api, new_tenant(api, "b")["token"])
    path = f"/v1/jobs/{other['id']}/reports/batch"
    wrong = api.post(path, json={"reports": [window(0)]}, headers=bearer(agent_job["agent_token"]))
    assert wrong.status_code == 404


def test_insert_skips_windows_another_request_stored_and_says_which_were_its_own(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
) -> None:
    first = post_batch(api, agent_job, [window(0), window(1)])
    assert first.status_code == 200
    received = db_session.scalar(select(func.max(MetricWindow.received_at)))
    assert received is not None
    later = received + timedelta(seconds=1)
    rows = [
        {
            "job_id": agent_job["id"],
            "window_start": T0 + timedelta(seconds=10 * k),
            "window_end": T0 + timedelta(seconds=10 * k + 10),
            "received_at": later,
            "executors": 1,
            "report": {"k": k},
        }
        for k in range(3)
    ]
    ours = repo.insert_windows(db_session, rows)
    assert ours == {(T0 + timedelta(seconds=20), T0 + timedelta(seconds=30))}
    assert len(stored_ends(db_session)) == 3


@pytest.mark.parametrize("utility", [0.75, math.inf], ids=["one-json-array", "row-by-row"])
def test_windows_are_stored_alike_whichever_statement_carries_them(
    agent_job: dict[str, Any], db_session: Session, utility: float
) -> None:
    """Finite values go in as one JSON array, a value JSON cannot hold row by row."""
    document = {"window_start": "2026-01-01T00:00:00+00:00", "sources": [{"name": "s"}]}
    rows = [
        {
            "job_id": agent_job["id"],
            "window_start": T0 + timedelta(seconds=10 * k),
            "window_end": T0 + timedelta(seconds=10 * k + 10),
            "received_at": T0 + timedelta(seconds=10 * k + 11),
            "executors": 3,
            "report": document,
            "utility": utility if k == 1 else 0.5,
            "juice": None,
            "latency_ms": 12.5,
        }
        for k in range(2)
    ]
    assert repo.insert_windows(db_session, rows) == {
        (r["window_start"], r["window_end"]) for r in rows
    }
    stored = db_session.scalars(
        select(MetricWindow)
        .where(MetricWindow.job_id == agent_job["id"])
        .order_by(MetricWindow.window_end)
    ).all()
    assert [(w.window_start, w.window_end, w.received_at) for w in stored] == [
        (r["window_start"], r["window_end"], r["received_at"]) for r in rows
    ]
    assert [(w.executors, w.report, w.juice, w.latency_ms) for w in stored] == [
        (3, document, None, 12.5)
    ] * 2
    assert [w.utility for w in stored] == [0.5, utility]
    assert all(w.received_at.tzinfo is not None for w in stored)


def test_a_round_reads_a_job_s_windows_within_the_span_of_its_newest_and_at_most_its_cap(
    api: TestClient, agent_job: dict[str, Any], db_session: Session
) -> None:
    # Twenty windows of 10 s in one request, as a job posting far faster than its sub-window.
    assert post_batch(api, agent_job, [window(k) for k in range(20)]).status_code == 200
    since = T0 - timedelta(days=1)
    newest_end = T0 + timedelta(seconds=200)

    def ends(span_s: float, newest: int) -> list[float]:
        rows = repo.windows_since(db_session, [agent_job["id"]], since, span_s, newest)
        return [(newest_end - w.window_end).total_seconds() for w in rows]

    assert ends(35, 100) == [30, 20, 10, 0]  # in window order, within 35 s of the newest
    assert ends(35, 2) == [10, 0]  # capped at the newest two
    assert ends(1000, 100) == [10.0 * k for k in range(19, -1, -1)]
    # The simulator's store reads the same way.
    store = MemoryRoundStore(keep_s=10_000)
    store.reports["j"] = deque()
    for k in range(20):
        store.add_report("j", window(k), received_at=T0 + timedelta(seconds=300))
    recent = MemoryRoundTx(store).reports_since(["j"], since, 35, 100)["j"]
    assert [(newest_end - r.report.window_end).total_seconds() for r in recent] == [30, 20, 10, 0]
    capped = MemoryRoundTx(store).reports_since(["j"], since, 35, 2)["j"]
    assert len(capped) == 2
