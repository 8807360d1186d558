"""Operations of real `henge serve` processes on Postgres: Prometheus metrics after a few rounds,
leader election between two replicas (only the leader runs rounds; a killed leader is
replaced within 30 s; no round runs twice), and one server of two worker processes."""

from __future__ import annotations

import os
import re
import signal
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from scheduler.registry.engine import make_engine, make_session_factory
from scheduler.registry.tables import Round
from scheduler.spark.apps import wait_for
from tests.serving import ServerHandle, register_job, run_server

FAST = {"HENGE_ROUND_INTERVAL_S": "1", "HENGE_LEADER_RETRY_S": "1", "HENGE_POLICY": "henge"}


def metrics(server: ServerHandle) -> dict[str, list[tuple[dict[str, str], float]]]:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def value(found: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    return sum(
        v for lab, v in found.get(name, []) if all(lab.get(k) == x for k, x in labels.items())
    )


def post_reports(server: ServerHandle, job: dict[str, Any], count: int) -> None:
    start = datetime.now(UTC) - timedelta(seconds=count)
    for i in range(count):
        begin = start + timedelta(seconds=i)
        end = begin + timedelta(seconds=1)
        body = {
            "window_start": begin.isoformat(),
            "window_end": end.isoformat(),
            "executors": 2,
            "busy_core_ms": 1600,
            "max_parallelism": 8,
            "sources": [{"name": "s", "arrived_rows": 1000, "processed_rows": 1000}],
            "latency_ms": {"mean": 1000.0},
        }
        answer = httpx.post(f"{server.url}/v1/jobs/{job['id']}/reports", json=body,
                            headers={"Authorization": f"Bearer {job['agent_token']}"})  # fmt: skip
        assert answer.status_code == 200, answer.text


def test_metrics_after_a_few_rounds(fresh_pg_url: str):
    with run_server(fresh_pg_url, env=FAST) as server:
        job = register_job(server)
        post_reports(server, job, 5)
        bad = httpx.post(f"{server.url}/v1/jobs/{job['id']}/reports", json={"window_start": "x"},
                         headers={"Authorization": f"Bearer {job['agent_token']}"})  # fmt: skip
        assert bad.status_code == 422
        wait_for("three rounds", lambda: value(metrics(server), "henge_rounds_total") >= 3, 30)
        found = metrics(server)
    assert value(found, "henge_leader") == 1
    assert value(found, "henge_round_duration_seconds_count") >= 3
    assert 0 < value(found, "henge_round_duration_seconds_sum") < 10
    assert value(found, "henge_rounds_total", action="admit") == 1
    assert value(found, "henge_max_utility") == 35
    assert 0 <= value(found, "henge_total_utility") <= 35
    assert value(found, "henge_reports_total", outcome="accepted") == 5
    assert value(found, "henge_reports_total", outcome="rejected_invalid") == 1
    job_series = found.get("henge_job_utility", [])
    assert [labels for labels, _ in job_series] == [{"job_id": job["id"], "job": "pageload"}]
    assert 0 <= job_series[0][1] <= 35


def rounds_run_by(server: ServerHandle) -> list[int]:
    """Round numbers this process logged (one JSON log line per round)."""
    return [int(n) for n in re.findall(r'"round": (\d+), "state"', server.log_text())]


def test_leader_election_one_replica_runs_rounds_and_another_takes_over(fresh_pg_url: str):
    with (
        run_server(fresh_pg_url, env=FAST) as first,
        run_server(fresh_pg_url, env=FAST, migrate_first=False) as second,
    ):
        servers = (first, second)

        def one_leader_running() -> bool:
            leading = sum(value(metrics(s), "henge_leader") for s in servers)
            return leading == 1 and any(rounds_run_by(s) for s in servers)

        wait_for("a leader running rounds", one_leader_running, 30)
        time.sleep(4)  # several more rounds: the other replica must not run any
        leaders = [s for s in servers if value(metrics(s), "henge_leader") == 1]
        assert len(leaders) == 1
        leader = leaders[0]
        follower = second if leader is first else first
        assert rounds_run_by(leader) and rounds_run_by(follower) == []

        leader.process.kill()  # kill -9: no clean shutdown, no lock released by hand
        leader.process.wait(timeout=10)
        killed_at, before = time.monotonic(), max(rounds_run_by(leader))
        wait_for("the follower to run rounds after the leader died",
                 lambda: any(n > before for n in rounds_run_by(follower)), 30)  # fmt: skip
        assert time.monotonic() - killed_at <= 30
        assert value(metrics(follower), "henge_leader") == 1

    engine = make_engine(fresh_pg_url, pool_size=1)
    try:
        with make_session_factory(engine)() as session:
            numbers = list(session.scalars(select(Round.number).order_by(Round.number)))
    finally:
        engine.dispose()
    # No round ran twice and none went missing across the take-over.
    assert numbers == list(range(1, len(numbers) + 1))
    assert set(rounds_run_by(leader)).isdisjoint(rounds_run_by(follower))


def workers_that_answered(server: ServerHandle, path_end: str) -> set[int]:
    """The workers whose debug log has a request to a path ending with ``path_end``."""
    found = set()
    for line in server.log_text().splitlines():
        if '"event": "request"' in line and path_end in line:
            match = re.search(r'"worker": (\d+)', line)
            assert match, line
            found.add(int(match.group(1)))
    return found


def test_two_workers_share_the_port_and_add_up_their_metrics(fresh_pg_url: str):
    env = {**FAST, "HENGE_LOG_LEVEL": "debug"}
    with run_server(fresh_pg_url, env=env, args=["--workers", "2"]) as server:
        job = register_job(server)
        post_reports(server, job, 30)  # a connection each: the kernel spreads them
        wait_for("three rounds", lambda: value(metrics(server), "henge_rounds_total") >= 3, 30)
        scrapes = [metrics(server) for _ in range(6)]  # answered by either worker
        log = server.log_text()
        answered = workers_that_answered(server, "/reports")
    assert answered == {0, 1}
    rounds_logged = re.findall(r'"round": \d+, "state".*"worker": (\d+)', log)
    assert rounds_logged and set(rounds_logged) == {"0"}  # only the first worker runs rounds
    for found in scrapes:
        assert value(found, "henge_reports_total", outcome="accepted") == 30  # both workers'
        assert value(found, "henge_leader") == 1
        assert value(found, "henge_rounds_total") >= 3
        assert value(found, "henge_max_utility") == 35
        job_series = found.get("henge_job_utility", [])
        assert [labels for labels, _ in job_series] == [{"job_id": job["id"], "job": "pageload"}]


def test_a_worker_that_dies_stops_the_service(fresh_pg_url: str):
    with run_server(fresh_pg_url, env=FAST, args=["--workers", "2"]) as server:
        wait_for("both workers", lambda: len(worker_pids(server)) == 2, 30)
        os.kill(worker_pids(server)[1], signal.SIGKILL)
        code = server.process.wait(timeout=30)
        log = server.log_text()
    assert code != 0
    assert re.search(r"henge-worker-\d exited with code -9; stopped the others", log), log
    with pytest.raises(httpx.ConnectError):  # nothing listens on the port any more
        httpx.get(f"{server.url}/healthz", timeout=2)


def worker_pids(server: ServerHandle) -> list[int]:
    return [int(p) for p in re.findall(r"Started server process \[(\d+)\]", server.log_text())]
