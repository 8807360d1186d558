"""The admin's way through the dashboard: sign in, the overview drawn with the stored rounds and
actions, the jobs table, a job page, the rounds log and its filters, refreshing while open."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import insert
from sqlalchemy.orm import Session

from scheduler.bench.dashboard_seed import SeededJob, post_reports
from scheduler.core.decide import SchedulerState
from scheduler.core.policies.henge.model import JobModel
from scheduler.core.policies.henge.product_state import ProductState
from scheduler.registry.engine import make_engine
from scheduler.registry.tables import Round, StoredSchedulerState
from tests.browser.conftest import (
    REFRESH_S,
    SEED_ROUNDS,
    Dashboard,
    api_get,
    screenshot,
    sign_in,
    wait_ready,
)
from tests.integration.test_api import report_body
from tests.integration.test_job_diagnosis import SLOW as SLOW_EXECUTOR

CHART = """(id) => {
    const entry = window.__hengeCharts[id];
    const chart = Chart.getChart(id);
    return {points: entry.points, data: entry.data, markers: entry.markers,
            lines: entry.markerLines, drawnAt: entry.drawnAt,
            rendered: chart.getDatasetMeta(0).data.length};
}"""


def _names(dashboard: Dashboard) -> dict[str, str]:
    return {job.id: job.name for job in dashboard.seeded.jobs}


def _expected_markers(rounds: list[dict[str, Any]], names: dict[str, str]) -> dict[int, list[str]]:
    return {
        r["number"]: sorted({names[a["job_id"]] for a in r["actions"]})
        for r in rounds
        if r["actions"]
    }


def _column(page: Any, table: str, index: int) -> list[str]:
    script = "([t, i]) => [...document.querySelectorAll(`#${t} tbody tr`)]"
    script += ".map((tr) => tr.cells[i].textContent)"
    return list(page.evaluate(script, [table, index]))


def test_admin_signs_in_and_the_overview_is_drawn_with_the_stored_rounds(
    page: Any, dashboard: Dashboard
) -> None:
    sign_in(page, dashboard.admin_token)
    assert page.url == f"{dashboard.url}/ui/"
    wait_ready(page)
    stored = api_get(dashboard, "/v1/rounds", limit=10_000)[::-1]  # oldest first
    drawn = page.evaluate(CHART, "utility-chart")

    assert drawn["points"] == drawn["rendered"] == len(stored) == SEED_ROUNDS
    total, maximum = drawn["data"][0]["points"], drawn["data"][1]["points"]
    assert [p["y"] for p in total] == [r["total_utility"] for r in stored]
    assert [p["y"] for p in maximum] == [r["max_utility"] for r in stored]
    assert [p["x"] for p in total] == [
        datetime.fromisoformat(r["started_at"]).timestamp() * 1000 for r in stored
    ]
    # One labelled line per round that acted, naming the jobs its actions touched.
    expected = _expected_markers(stored, _names(dashboard))
    assert {m["round"]: sorted(m["jobs"]) for m in drawn["markers"]} == expected
    assert all(m["label"] == ", ".join(m["jobs"]) for m in drawn["markers"])
    assert drawn["lines"] == len(expected) > 0 and drawn["drawnAt"] is not None

    cluster = api_get(dashboard, "/v1/cluster")
    expected_now = f"{cluster['total_utility']:.1f} / {cluster['max_utility']:.1f}"
    assert page.text_content("#utility-now") == expected_now
    assert page.text_content("#state") == cluster["state"].replace("_", " ")
    assert page.locator("#allocation tbody tr").count() == len(dashboard.seeded.jobs)
    screenshot(page, "overview")

    # The time range picker: the last 15 minutes of data.
    page.select_option("#range-preset", "15m")
    wait_ready(page, loads=2)
    newest = datetime.fromisoformat(stored[-1]["started_at"])
    recent = [
        r
        for r in stored
        if datetime.fromisoformat(r["started_at"]) >= newest - timedelta(minutes=15)
    ]
    drawn = page.evaluate(CHART, "utility-chart")
    assert drawn["points"] == drawn["rendered"] == len(recent) < len(stored)
    assert {m["round"] for m in drawn["markers"]} == set(
        _expected_markers(recent, _names(dashboard))
    )
    assert "range=15m" in page.url
    screenshot(page, "overview-15min")
    assert page.console_errors == []


def test_jobs_table_sorts_and_opens_a_job_page_with_its_history_and_actions(
    page: Any, dashboard: Dashboard
) -> None:
    sign_in(page, dashboard.admin_token, "/ui/login?next=/ui/jobs")
    assert page.url == f"{dashboard.url}/ui/jobs"
    wait_ready(page)
    jobs = api_get(dashboard, "/v1/jobs")
    assert sorted(_column(page, "jobs", 0)) == sorted(j["name"] for j in jobs)
    page.click("th[data-key=priority] button")
    priorities = [float(v) for v in _column(page, "jobs", 3)]
    assert priorities == sorted(priorities)
    page.click("th[data-key=priority] button")
    assert [float(v) for v in _column(page, "jobs", 3)] == sorted(priorities, reverse=True)
    assert page.get_attribute("th[data-key=priority]", "aria-sort") == "descending"
    screenshot(page, "jobs")

    job = dashboard.seeded.jobs[0]
    with page.expect_navigation():
        page.click(f"a[href='/ui/jobs/{job.id}']")
    wait_ready(page)
    history = api_get(dashboard, f"/v1/jobs/{job.id}/history", limit=10_000)["points"]
    rounds = api_get(dashboard, "/v1/rounds", limit=10_000)
    acted = {r["number"] for r in rounds if any(a["job_id"] == job.id for a in r["actions"])}
    for chart, key in (("job-utility-chart", "utility"), ("job-executors-chart", "executors")):
        drawn = page.evaluate(CHART, chart)
        assert drawn["points"] == drawn["rendered"] == len(history)
        assert [p["y"] for p in drawn["data"][0]["points"]] == [h[key] for h in history]
        assert {m["round"] for m in drawn["markers"]} == acted and drawn["lines"] == len(acted)
    utility = page.evaluate("() => window.__hengeCharts['job-utility-chart'].data")
    assert (
        utility[1]["label"] == "priority (SLO met)" and utility[1]["points"][0]["y"] == job.priority
    )
    assert page.locator("#job-actions tbody tr").count() == len(acted)
    assert page.text_content("#job-name") == job.name
    # The input per minute, and the forecast's mean and upper quantile drawn after it.
    minutes = api_get(dashboard, f"/v1/jobs/{job.id}/input", limit=10_000)["minutes"]
    forecast = api_get(dashboard, f"/v1/jobs/{job.id}/forecast")
    drawn = page.evaluate(CHART, "job-input-chart")
    assert [d["label"] for d in drawn["data"]] == ["input", "forecast", "upper quantile"]
    assert [p["y"] for p in drawn["data"][0]["points"]] == [m["arrived_rate"] for m in minutes]
    assert [p["y"] for p in drawn["data"][1]["points"]] == forecast["mean"]
    assert [p["y"] for p in drawn["data"][2]["points"]] == forecast["upper"]
    starts = datetime.fromisoformat(forecast["start"]).timestamp() * 1000
    assert drawn["data"][1]["points"][0]["x"] == drawn["data"][2]["points"][0]["x"] == starts
    trust = "trusted" if forecast["trusted"] else "not trusted"
    assert page.text_content("#job-forecast") == trust
    assert forecast["method"] in page.text_content("#job-forecast-sub")
    screenshot(page, "job")
    assert page.console_errors == []


def test_rounds_log_filters_by_action_job_and_time_range(page: Any, dashboard: Dashboard) -> None:
    sign_in(page, dashboard.admin_token)
    page.goto("/ui/rounds")
    wait_ready(page)
    rounds = api_get(dashboard, "/v1/rounds", limit=10_000)
    assert page.get_attribute("#rounds", "data-matching") == str(len(rounds))

    page.select_option("#filter-state", "converged")
    converged = [r for r in rounds if r["state"] == "converged"]
    assert page.get_attribute("#rounds", "data-matching") == str(len(converged))
    assert set(_column(page, "rounds", 2)) == {"converged"}
    page.select_option("#filter-state", "")

    page.select_option("#filter-action", "reconfigure")
    reconfigured = [r for r in rounds if r["action"] == "reconfigure"]
    assert page.get_attribute("#rounds", "data-matching") == str(len(reconfigured))
    assert set(_column(page, "rounds", 3)) == {"reconfigure"}

    job = dashboard.seeded.jobs[1]
    page.select_option("#filter-job", job.id)
    touching = [r for r in reconfigured if any(a["job_id"] == job.id for a in r["actions"])]
    assert page.get_attribute("#rounds", "data-matching") == str(len(touching)) != "0"
    assert [int(n) for n in _column(page, "rounds", 0)] == [r["number"] for r in touching]
    assert f"job={job.id}" in page.url and "action=reconfigure" in page.url
    screenshot(page, "rounds-filtered")

    # A custom time range: rounds 101 to 200 of the stored ones.
    page.select_option("#filter-job", "")
    page.select_option("#filter-action", "")
    oldest_first = rounds[::-1]
    since, until = oldest_first[100]["started_at"], oldest_first[199]["started_at"]
    page.fill("#range-since", since[:19])
    page.fill("#range-until", until[:19])
    page.click("#range button[type=submit]")
    wait_ready(page, loads=2)
    assert page.get_attribute("#rounds", "data-matching") == "100"
    assert int(_column(page, "rounds", 0)[0]) == oldest_first[199]["number"]
    screenshot(page, "rounds-range")
    assert page.console_errors == []


def test_the_overview_refreshes_itself_while_open(page: Any, dashboard: Dashboard) -> None:
    sign_in(page, dashboard.admin_token)
    wait_ready(page)
    before = page.evaluate("() => window.__hengeCharts['utility-chart'].points")
    newest = api_get(dashboard, "/v1/rounds", limit=1)[0]
    at = datetime.fromisoformat(newest["started_at"]) + timedelta(seconds=10)
    engine = make_engine(dashboard.database_url, pool_size=1)
    try:
        with engine.begin() as conn:
            conn.execute(
                insert(Round).values(
                    number=newest["number"] + 1,
                    started_at=at,
                    finished_at=at,
                    policy="henge",
                    state="converged",
                    action="none",
                    job_id=None,
                    reason="refresh test",
                    total_utility=newest["max_utility"],
                    max_utility=newest["max_utility"],
                )
            )
    finally:
        engine.dispose()
    page.wait_for_function(
        f"() => window.__hengeCharts['utility-chart'].points === {before + 1}",
        timeout=(REFRESH_S * 2 + 5) * 1000,
    )
    assert int(page.evaluate("() => document.body.dataset.loads")) >= 2


def _fresh_windows_and_a_model(dashboard: Dashboard, job: SeededJob) -> None:
    """Six windows of ``job`` after its newest (a current window on its agent's clock) and a
    stored state holding a trusted model of it, as a round keeps it."""
    seeded = dashboard.seeded
    history = api_get(dashboard, f"/v1/jobs/{job.id}/history", limit=1)["points"]
    end = datetime.fromisoformat(history[-1]["window_end"]) + timedelta(seconds=60)
    one = replace(seeded, jobs=[job])
    with httpx.Client(base_url=dashboard.url, timeout=30) as http:
        post_reports(http, one, 6, end, 10.0, {job.id: 4}, random.Random(3))
    model = JobModel(row_cost_s=0.0001, overhead_s=0.02, trigger_s=1.0, windows=20,
                     last_report=None)  # fmt: skip
    state = SchedulerState("henge", ProductState(models={job.id: model}, errors={job.id: 0.01}))
    engine = make_engine(dashboard.database_url, pool_size=1)
    try:
        with Session(engine) as session:
            row = session.get(StoredSchedulerState, 1)
            last = row.last_round if row is not None else SEED_ROUNDS
            session.merge(StoredSchedulerState(id=1, state=state.to_json(), last_round=last,
                                               updated_at=datetime.now(UTC)))  # fmt: skip
            session.commit()
    finally:
        engine.dispose()


def _throughput_job(dashboard: Dashboard) -> SeededJob:
    """A job with a throughput SLO, which one executor meets at the row cost of the model
    :func:`_fresh_windows_and_a_model` keeps."""
    throughput = {
        j["id"] for j in api_get(dashboard, "/v1/jobs") if j["slo"].get("latency_ms") is None
    }
    return next(j for j in reversed(dashboard.seeded.jobs) if j.id in throughput)


def test_a_job_page_shows_its_options_or_why_it_has_none(page: Any, dashboard: Dashboard) -> None:
    trusted_job = _throughput_job(dashboard)
    other = next(j for j in dashboard.seeded.jobs if j.id != trusted_job.id)
    _fresh_windows_and_a_model(dashboard, trusted_job)
    sign_in(page, dashboard.admin_token, f"/ui/login?next=/ui/jobs/{trusted_job.id}")
    wait_ready(page)
    options = api_get(dashboard, f"/v1/jobs/{trusted_job.id}/options")
    assert options["trusted"] and options["options"], options
    assert page.text_content("#job-options-model") == f"model trusted ({options['reason']})"
    assert page.is_visible("#job-options")
    listed = options["options"]
    assert _column(page, "job-options", 0) == [str(o["executors"]) for o in listed]
    assert _column(page, "job-options", 3) == [f"{o['now']['utility']:.2f}" for o in listed]
    marks = dict(zip(_column(page, "job-options", 0), _column(page, "job-options", 8), strict=True))
    assert options["meets_now"] == 1  # 2,000 rows/s at 0.1 ms a row: a fifth of one core
    assert "now" in marks["1"].split(", ")
    assert sum("now" in m.split(", ") for m in marks.values()) == 1
    screenshot(page, "job-options")

    # A job without a model: the reason, and no table.
    with page.expect_navigation():
        page.goto(f"/ui/jobs/{other.id}")
    wait_ready(page)
    reason = api_get(dashboard, f"/v1/jobs/{other.id}/options")["reason"]
    assert page.text_content("#job-options-model") == f"no options: {reason}"
    assert not page.is_visible("#job-options")
    assert page.console_errors == []


def test_a_job_page_tells_its_diagnosis_and_its_latest_task_figures(
    page: Any, dashboard: Dashboard
) -> None:
    slow_job, other = dashboard.seeded.jobs[0], dashboard.seeded.jobs[1]
    history = api_get(dashboard, f"/v1/jobs/{slow_job.id}/history", limit=1)["points"]
    end = datetime.fromisoformat(history[-1]["window_end"]) + timedelta(seconds=60)
    with httpx.Client(base_url=dashboard.url, timeout=30) as http:
        for k in range(4, 0, -1):
            body = report_body(end - timedelta(seconds=10 * k), executor_tasks=SLOW_EXECUTOR)
            answer = http.post(
                f"/v1/jobs/{slow_job.id}/reports",
                json=body,
                headers={"Authorization": f"Bearer {slow_job.agent_token}"},
            )
            assert answer.status_code == 200, answer.text
    found = api_get(dashboard, f"/v1/jobs/{slow_job.id}/diagnosis")
    assert found["finding"] == "slow_executor", found
    sign_in(page, dashboard.admin_token, f"/ui/login?next=/ui/jobs/{slow_job.id}")
    wait_ready(page)
    assert page.text_content("#job-diagnosis-finding") == found["reason"]
    assert found["reason"].startswith("slow executor 2 on node-b")
    note = "acted on" if found["acted_on"] else "not acted on"
    assert page.text_content("#job-diagnosis-note") == f"{note}: {found['note']}"
    assert _column(page, "job-diagnosis-executors", 0) == ["2", "3", "1", "4"]
    assert _column(page, "job-diagnosis-executors", 1)[0] == "node-b"
    assert _column(page, "job-diagnosis-executors", 3)[0] == "400"
    assert _column(page, "job-diagnosis-stages", 0) == ["aggregate"]
    screenshot(page, "job-diagnosis")

    # A job whose reports carry no task figures: the note, and no tables.
    with page.expect_navigation():
        page.goto(f"/ui/jobs/{other.id}")
    wait_ready(page)
    assert page.text_content("#job-diagnosis-finding") == "no finding"
    assert not page.is_visible("#job-diagnosis-executors")
    assert not page.is_visible("#job-diagnosis-stages")
    assert page.console_errors == []


def test_the_capacity_page_draws_each_tier_and_answers_a_what_if(
    page: Any, dashboard: Dashboard
) -> None:
    sized = _throughput_job(dashboard)
    _fresh_windows_and_a_model(dashboard, sized)
    sign_in(page, dashboard.admin_token, "/ui/login?next=/ui/capacity")
    wait_ready(page)
    plan = api_get(dashboard, "/v1/capacity")
    tiers = plan["tiers"]
    assert len(tiers) >= 2, plan
    # The seeded jobs hold more than the static cluster's 32 cores: the lowest tiers miss.
    assert not plan["fits"] and plan["capacity_cores"] == 32.0
    dropped = plan["first_dropped"]
    assert page.text_content("#verdict") == f"priority {dropped:.0f} gives way first"
    assert page.text_content("#peak-cores") == f"{plan['peak_cores']} cores"
    assert _column(page, "capacity-tiers", 0) == [f"{t['priority']:.0f}" for t in tiers]
    assert _column(page, "capacity-tiers", 2) == [str(t["peak_cores"]) for t in tiers]
    short = [str(t["short_cores"]) if t["short_cores"] else "fits" for t in tiers]
    assert _column(page, "capacity-tiers", 3) == short
    drawn = page.evaluate(CHART, "capacity-chart")
    assert drawn["points"] == len(plan["total"]) and drawn["rendered"] == len(plan["total"])
    labels = [d["label"] for d in drawn["data"]]
    assert labels[-1] == "cores planned with" and len(labels) == len(tiers) + 1
    top = drawn["data"][len(tiers) - 1]["points"]  # every tier added up: the total
    assert [p["y"] for p in top] == plan["total"]
    # The jobs without a trusted model are counted at what they hold, and listed with why.
    notes = [j for j in plan["jobs"] if j["note"]]
    assert len(_column(page, "capacity-notes", 0)) == len(notes) > 0
    assert sized.id not in {j["job_id"] for j in notes}
    screenshot(page, "capacity")

    # What if the cluster had the cores the jobs need at the most: every tier fits.
    page.fill("#cores", str(plan["peak_cores"]))
    page.dispatch_event("#cores", "change")
    page.wait_for_function(
        "() => document.getElementById('verdict').textContent === 'every tier fits'"
    )
    assert _column(page, "capacity-tiers", 3) == ["fits"] * len(tiers)
    assert page.text_content("#capacity-cores") == f"{plan['peak_cores']} cores"
    assert page.console_errors == []
