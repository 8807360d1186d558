"""End to end on real Spark: real Postgres, a real ``henge serve``, two example jobs with the agent.

Two jobs share a 6-core standalone worker. ``pageload`` (generator input, 15 ms of waiting per row
in 4 partitions, 8 s mean latency objective) starts light and is held at one executor (its
registered maximum) until a window meets its SLO there; then its maximum is raised and its input
goes to ``CONGESTED_RATE`` rows/s, which one executor cannot keep up with. The scheduler (the
product policy, rounds every 2 s, cluster view from the standalone master) raises its executors;
the agent applies the target and Spark's executor count follows; the SLO is met; the job's history
and the rounds say so. (The product policy judges a grown job that still drains the backlog of the
congestion on its drain rate; ``henge-paper`` judges it on its latency, which the backlog keeps
above the SLO for longer than a short quiesce, and reverts it.)
Lowering the job's maximum then lowers its target, and the agent removes executors. Last, an
executor of ``wordcount`` is killed: Spark replaces it, the agent counts the loss, and the
scheduler's target and actions for the job stay as they were; then its driver restarts with
the same job id, and the job's history goes on without a second registration.

The drivers run the henge-agent wheel installed in a virtualenv of their own (``driver_python``)
and configure it the way a tenant does: ``spark.henge.*`` keys in the Spark conf and the token
in the driver's environment (``HENGE_AGENT_TOKEN``).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from scheduler.spark.local_cluster import LocalCluster
from tests.serving import run_server
from tests.spark.conftest import App, WaitFailed, assert_agent_from_wheel, start_app, wait_for

pytestmark = pytest.mark.spark

SUB_WINDOW_S = 3
LATENCY_SLO_MS = 8000
CONGESTED_RATE = 80
"""Rows/s of the congestion: above what one executor takes (600-row batches of 15 ms per row:
about 60 rows/s) and well below what four take (batches capped at 600 rows, about 3 s each on four
executors: 200 rows/s), so that the backlog built before the growth drains well within
``SLO_WAIT_S``. At 100 rows/s (about 155 measured) a CI run on a clean clone still drained at
45 rows/s three minutes after the growth, at 22 s of latency against the 8-s SLO; at 80 rows/s
two local runs passed, one meeting it 154 s after the congestion began (the wait starts later,
at the growth)."""
SLO_WAIT_S = 240
"""How long the congested job is given, from its growth, to meet its SLO on more executors."""
APP_DURATION_S = "600"
"""The drivers' own time limit, longer than all the test's waits (the test stops them itself)."""
PAGELOAD = {
    "name": "pageload",
    "priority": 10,
    "slo": {"latency_ms": LATENCY_SLO_MS, "latency_stat": "mean"},
    "executors": {"initial": 1, "min": 1, "max": 4, "cores": 1, "memory_mb": 512},
    "actuator": "agent",
}
WORDCOUNT = {
    "name": "wordcount",
    "priority": 5,
    "slo": {"latency_ms": 30000, "latency_stat": "mean"},
    "executors": {"initial": 1, "min": 1, "max": 2, "cores": 1, "memory_mb": 512},
    "actuator": "agent",
}


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _agent_args(server_url: str, job: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """The agent's settings, which the examples put in the Spark conf (the token goes in the
    environment: :func:`_token_env`)."""
    bounds = spec["executors"]
    return [
        "--henge-url", server_url,
        "--job-id", job["id"],
        "--sub-window-s", str(SUB_WINDOW_S),
        "--min-executors", str(bounds["min"]),
        "--max-executors", str(bounds["max"]),
        "--initial-executors", str(bounds["initial"]),
    ]  # fmt: skip


def _token_env(job: dict[str, Any]) -> dict[str, str]:
    return {"HENGE_AGENT_TOKEN": job["agent_token"]}


def _assert_at_schedulers_target(
    http: httpx.Client, admin: dict[str, str], as_tenant: dict[str, str], app: App, job_id: str
) -> None:
    """The app holds what the scheduler gives it. For the job that is not congested that is
    usually its 1 executor, but the scheduler may grow it too when its batches, on this busy 2-core
    machine, miss their objective; then a round says so."""

    def target() -> int:
        return int(http.get(f"/v1/jobs/{job_id}", headers=as_tenant).json()["executors"]["target"])

    wait_for(
        f"{app.name} at the scheduler's target for it",
        lambda: app.status().get("executors") == target(),
        60,
        (app,),
    )
    if target() != 1:
        assert _actions_on(http, admin, job_id)


def _a_lower_maximum_removes_executors(
    http: httpx.Client, as_tenant: dict[str, str], app: App, job_id: str
) -> dict[str, Any]:
    """The tenant lowers the job's maximum: its target falls and the agent removes executors."""
    patched = http.patch(
        f"/v1/jobs/{job_id}",
        json={"executors": {**PAGELOAD["executors"], "max": 1}},
        headers=as_tenant,
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["executors"]["target"] == 1
    wait_for(
        f"the agent to remove {app.name}'s extra executors",
        lambda: (s := app.status()).get("executors") == 1 and s.get("target") == 1,
        90,
        (app,),
    )
    status = app.status()
    assert status["agent"]["reports_sent"] > 10
    assert status["agent"]["reports_dropped"] == 0
    return status


def _actions_on(http: httpx.Client, admin: dict[str, str], job_id: str) -> list[dict[str, Any]]:
    rounds = http.get("/v1/rounds", params={"limit": 500}, headers=admin).json()
    return [a for r in rounds for a in r["actions"] if a["job_id"] == job_id]


def _history(http: httpx.Client, as_tenant: dict[str, str], job_id: str) -> list[dict[str, Any]]:
    answer = http.get(f"/v1/jobs/{job_id}/history", params={"limit": 1000}, headers=as_tenant)
    return list(answer.json()["points"])


def _meets(point: dict[str, Any]) -> bool:
    return point["latency_ms"] is not None and point["latency_ms"] <= LATENCY_SLO_MS


LOADED = 0.5
"""A window whose capacity (the executor's busy share) is at least this carries the
congestion: it asks 80 rows/s x 15 ms = 1.2 cores of one executor, the base rate 0.15 (a
passing run's windows on one executor: 1.00, 0.64 and 0.69)."""


def _congested(point: dict[str, Any]) -> bool:
    """The window shows the congestion on one executor: it misses the SLO, keeps its executor
    busy before the rows queued up have pushed its latency past the SLO, or completes no batch
    at all (the batch the rise overwhelmed is still running; the window earns nothing). The
    scheduler may grow the job on that alone (eq. 2.4 reads the capacity): a clean-clone CI
    run had it on 4 executors 12 s into the congestion, another 11 s in on two windows that
    completed no batch, and the generator's windows show no juice below 1 (it makes its rows
    as the batches ask for them)."""
    if point["executors"] != 1:
        return False
    missed = point["latency_ms"] is not None and not _meets(point)
    loaded = point["capacity"] is not None and point["capacity"] >= LOADED
    stalled = point["latency_ms"] is None and point["utility"] == 0
    return missed or loaded or stalled


def _brief(points: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The windows' end, executors, utility, capacity and latency, for a failure's report."""
    keys = ("window_end", "executors", "utility", "capacity", "latency_ms")
    return [tuple(p[k] for k in keys) for p in points]


def _settled_on_one_executor(
    http: httpx.Client, as_tenant: dict[str, str], job_id: str, apps: tuple[App, ...]
) -> None:
    """A stored window of the job meets its SLO on one executor at the base rate."""
    wait_for(
        "a stored window of pageload meeting its SLO on one executor",
        lambda: any(p["executors"] == 1 and _meets(p) for p in _history(http, as_tenant, job_id)),
        150,
        apps,
    )


def _the_congested_job_met_its_slo_on_more_executors(
    http: httpx.Client,
    admin: dict[str, str],
    as_tenant: dict[str, str],
    job_id: str,
    congested_at: datetime,
    apps: tuple[App, ...],
) -> None:
    """A stored window of the congestion meets the SLO on more executors (at the job's full
    priority), after one of the congestion in which a single executor was overwhelmed
    (:func:`_congested`), and the scheduler grew the job.

    One wait on the stored windows, not the job's newest window and then the history: the
    newest window may be one the agent counted before the growth reached Spark."""

    def of_congestion() -> list[dict[str, Any]]:
        # (windows before it may have met the SLO on several executors: the driver may start on
        # several before the agent sets its initial one)
        return [p for p in _history(http, as_tenant, job_id)
                if datetime.fromisoformat(p["window_start"]) >= congested_at]  # fmt: skip

    def met_on_more(points: list[dict[str, Any]]) -> dict[str, Any] | None:
        return next((p for p in points if p["executors"] > 1 and _meets(p)), None)

    try:
        points = wait_for(
            "a stored window of pageload meeting its SLO on more executors",
            lambda: (h := of_congestion()) and met_on_more(h) and h,
            SLO_WAIT_S,
            apps,
        )
    except WaitFailed as failed:
        raise AssertionError(
            f"{failed}\nwindows: {_history(http, as_tenant, job_id)}\n"
            f"actions: {_actions_on(http, admin, job_id)}"
        ) from failed
    met = met_on_more(points)
    assert met is not None and met["utility"] == pytest.approx(PAGELOAD["priority"])
    before = points[: points.index(met)]
    print("pageload's windows of the congestion:", _brief(points))
    assert any(_congested(p) for p in before), _brief(points)
    actions = _actions_on(http, admin, job_id)
    assert any(a["to_executors"] > a["from_executors"] >= 1 for a in actions), actions
    met_after = datetime.fromisoformat(met["window_end"]) - congested_at
    print(f"pageload met its SLO on {met['executors']} executors "
          f"{met_after.total_seconds():.0f} s after the congestion began")  # fmt: skip


def _an_executor_dies(
    http: httpx.Client,
    admin: dict[str, str],
    as_tenant: dict[str, str],
    cluster: LocalCluster,
    app: App,
    job: dict[str, Any],
) -> None:
    """One of the app's executor processes is killed (SIGKILL): Spark starts another, the agent
    counts the loss, and the scheduler neither moves the job's target nor records an action."""

    def target_now() -> int:
        answer = http.get(f"/v1/jobs/{job['id']}", headers=as_tenant).json()
        return int(answer["executors"]["target"])

    # The job may still be settling from the steps before (an executor leaving after a resize
    # exits a little after the count drops): start from a running count that equals the target.
    # The processes and the target it waited on are the ones used: read again after the wait,
    # they once differed (2 processes against a target of 1, in a clean-clone CI run).
    def settled() -> tuple[list[int], int] | None:
        pids, target = cluster.executor_pids(app.name), target_now()
        return (pids, target) if len(pids) == target == app.status().get("executors") else None

    pids, target = wait_for(f"{app.name} running exactly its target", settled, 90, (app,))
    actions = _actions_on(http, admin, job["id"])
    os.kill(pids[0], signal.SIGKILL)

    def replaced() -> bool:
        now = cluster.executor_pids(app.name)
        status = app.status()
        return (
            pids[0] not in now
            and len(now) == target
            and status.get("executors") == target
            and status["agent"]["executors_lost"] >= 1
        )

    wait_for(f"{app.name}'s lost executor replaced and counted", replaced, 90, (app,))
    after = http.get(f"/v1/jobs/{job['id']}", headers=as_tenant).json()
    assert after["executors"]["target"] == target
    assert _actions_on(http, admin, job["id"]) == actions


def _the_driver_restarts(
    http: httpx.Client,
    as_tenant: dict[str, str],
    app: App,
    start: Callable[[], App],
    job: dict[str, Any],
) -> None:
    """The app's driver stops and a new one starts with the same job id and checkpoint: its
    agent reports on the same job, nothing is registered twice, and the job's history goes on
    after the old driver's last window, without an overlap or a window refused."""

    def points() -> list[dict[str, Any]]:
        return _history(http, as_tenant, job["id"])

    app.stop()
    before = points()
    again = start()
    wait_for(
        f"{app.name}'s new driver reporting",
        lambda: (
            (s := again.status()).get("agent") is not None
            and s["agent"]["reports_sent"] >= 3
            and (s.get("last_batch") or 0) >= 1
        ),
        150,
        (again,),
    )
    after = points()
    assert after[: len(before)] == before
    new = after[len(before) :]
    assert new, after[-3:]
    old_end = datetime.fromisoformat(before[-1]["window_end"])
    assert datetime.fromisoformat(new[0]["window_start"]) >= old_end
    ends = [datetime.fromisoformat(p["window_end"]) for p in after]
    assert ends == sorted(set(ends))
    assert again.status()["agent"]["reports_dropped"] == 0
    jobs = http.get("/v1/jobs", headers=as_tenant).json()
    assert sorted(j["name"] for j in jobs) == ["pageload", "wordcount"]
    print(f"{app.name} restarted; its windows around the restart: {before[-2:]} {new[:3]}")


def test_the_scheduler_resizes_a_congested_job_through_the_agent(
    spark_cluster: LocalCluster, fresh_pg_url: str, tmp_path: Path, driver_python: Path
) -> None:
    started = time.monotonic()
    env = {
        "HENGE_ROUND_INTERVAL_S": "2",
        "HENGE_SUB_WINDOW_S": str(SUB_WINDOW_S),
        "HENGE_WINDOW_S": "15",
        "HENGE_STALE_AFTER_S": "30",
        "HENGE_RECOVERY_OBSERVE_S": "0",
        "HENGE_POLICY": "henge",
        "HENGE_POLICY_PARAMS": json.dumps({"quiesce_s": 30}),
        "HENGE_CLUSTER_VIEW": "spark-standalone",
        "HENGE_SPARK_MASTER_UI_URL": spark_cluster.master_ui_url,
    }
    control = tmp_path / "pageload-rate.json"
    control.write_text(json.dumps({"rate": 10}))
    apps: list[App] = []
    with (
        run_server(fresh_pg_url, env=env) as server,
        httpx.Client(base_url=server.url, timeout=10) as http,
    ):
        try:
            admin = _bearer(server.admin_token)
            tenant = http.post("/v1/tenants", json={"name": "web"}, headers=admin)
            assert tenant.status_code == 201, tenant.text
            as_tenant = _bearer(tenant.json()["token"])
            jobs = {}
            # pageload is held at one executor until it settles: its first batches, on a cold
            # JVM, may miss its SLO, and a growth then would meet the congestion on several.
            held = {**PAGELOAD, "executors": {**PAGELOAD["executors"], "max": 1}}
            for spec in (WORDCOUNT, held):
                created = http.post("/v1/jobs", json=spec, headers=as_tenant)
                assert created.status_code == 201, created.text
                jobs[spec["name"]] = created.json()
            pageload_id = jobs["pageload"]["id"]

            def job(job_id: str) -> dict[str, Any]:
                return http.get(f"/v1/jobs/{job_id}", headers=as_tenant).json()

            wait_for(
                "both jobs admitted",
                lambda: all(job(j["id"])["status"] == "admitted" for j in jobs.values()),
                60,
            )

            pageload = start_app(
                "pageload",
                [
                    "--master", spark_cluster.master_url,
                    "--source", "generator",
                    "--control-file", str(control),
                    "--rate", "10",
                    "--cost-us", "15000",
                    "--cost-mode", "sleep",
                    "--max-rows-per-batch", "600",
                    "--partitions", "4",
                    "--duration-s", APP_DURATION_S,
                    *_agent_args(server.url, jobs["pageload"], PAGELOAD),
                ],
                tmp_path,
                driver_python,
                env=_token_env(jobs["pageload"]),
            )  # fmt: skip
            apps.append(pageload)

            def start_wordcount() -> App:
                app = start_app(
                    "wordcount",
                    [
                        "--master", spark_cluster.master_url,
                        "--source", "rate",
                        "--rate", "20",
                        "--duration-s", APP_DURATION_S,
                        *_agent_args(server.url, jobs["wordcount"], WORDCOUNT),
                    ],
                    tmp_path,
                    driver_python,
                    env=_token_env(jobs["wordcount"]),
                )  # fmt: skip
                apps.append(app)
                return app

            # Both drivers start at once: each takes its own time to start its JVM and executor.
            # Each is awaited on the count the scheduler gives it, not on 1: wordcount may be
            # grown while pageload is awaited, and may hold 1 for only a few seconds (10 s in a
            # run whose wait for 1 timed out).
            wordcount = start_wordcount()
            for app in (pageload, wordcount):
                wait_for(
                    f"{app.name} running on the executors the scheduler gives it",
                    lambda app=app: (
                        (s := app.status()).get("executors") == s.get("target")
                        and (s.get("last_batch") or 0) >= 1
                    ),
                    150,
                    (pageload, wordcount),
                )
            assert pageload.status()["executors"] == 1  # its maximum, until it settles
            assert_agent_from_wheel(pageload, driver_python)

            _settled_on_one_executor(http, as_tenant, pageload_id, (pageload, wordcount))
            raised = http.patch(
                f"/v1/jobs/{pageload_id}", json={"executors": PAGELOAD["executors"]},
                headers=as_tenant,
            )  # fmt: skip
            assert raised.status_code == 200, raised.text
            assert raised.json()["executors"]["target"] == 1

            # Congestion: more input than one executor can take.
            congested_at = datetime.now(UTC)
            control.write_text(json.dumps({"rate": CONGESTED_RATE}))
            grown = wait_for(
                "the scheduler to raise pageload's executors and Spark to follow",
                lambda: (
                    (s := pageload.status()).get("target", 0) > 1
                    and s.get("executors") == s.get("target")
                    and s
                ),
                200,
                (pageload, wordcount),
            )
            # Spark holds what the scheduler set; a later round may already have grown it again
            # (the agent learns a new target only with its next report).
            assert job(pageload_id)["executors"]["target"] >= grown["target"]
            _assert_at_schedulers_target(http, admin, as_tenant, wordcount, jobs["wordcount"]["id"])

            _the_congested_job_met_its_slo_on_more_executors(
                http, admin, as_tenant, pageload_id, congested_at, (pageload, wordcount)
            )

            status = _a_lower_maximum_removes_executors(http, as_tenant, pageload, pageload_id)
            _an_executor_dies(http, admin, as_tenant, spark_cluster, wordcount, jobs["wordcount"])
            _the_driver_restarts(http, as_tenant, wordcount, start_wordcount, jobs["wordcount"])
            elapsed = time.monotonic() - started
            print(f"end-to-end: {elapsed:.0f} s; pageload resizes {status['resizes']}; "
                  f"agent {status['agent']}")  # fmt: skip
        finally:
            for app in apps:
                app.stop()
