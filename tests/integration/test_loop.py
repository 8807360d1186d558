"""The scheduler loop on real Postgres: scripted reports for three jobs drive real rounds, and a
restarted loop carries on from the stored state."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, text

from scheduler.api.app import create_app
from scheduler.cluster.static import StaticCluster
from scheduler.core.decide import CoreSettings
from scheduler.core.model import Change
from scheduler.realize.agent import AgentRealizer
from scheduler.realize.dry_run import DryRunRealizer
from scheduler.realize.port import Realizer
from scheduler.registry import migrate
from scheduler.registry.engine import make_engine, make_session_factory
from scheduler.registry.sql_round_store import ROUND_LOCK_KEY, SqlRoundStore
from scheduler.registry.tables import Action, Allocation, Job, Round, StoredSchedulerState
from scheduler.round.loop import SchedulerLoop
from tests.conftest import ADMIN, FixedClock, bearer, make_settings

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ROUND_S = 10


@pytest.fixture
def engine(fresh_pg_url: str) -> Iterator[Engine]:
    migrate.upgrade(fresh_pg_url)
    engine = make_engine(fresh_pg_url, pool_size=2)
    yield engine
    engine.dispose()


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(T0)


@pytest.fixture
def api(fresh_pg_url: str, engine: Engine, clock: FixedClock) -> Iterator[TestClient]:
    app = create_app(make_settings(fresh_pg_url), engine, StaticCluster(1, 16, 65536), clock=clock)
    with TestClient(app) as client:
        yield client


def core() -> CoreSettings:
    # henge-paper with a 20 s quiesce so that a reconfiguration is judged two rounds later.
    return CoreSettings(policy="henge-paper", policy_params={"quiesce_s": 20})


def new_loop(engine: Engine, clock: FixedClock) -> SchedulerLoop:
    return SchedulerLoop(
        SqlRoundStore(make_session_factory(engine)),
        StaticCluster(1, 16, 65536),
        AgentRealizer(),
        core(),
        clock,
    )


JOBS = {
    # "slow" misses a 100 ms latency SLO whatever it is given: its latency is scripted flat, so
    # more executors bring no gain and the judge must blacklist it.
    "slow": {"priority": 30, "slo": {"latency_ms": 100}},
    "steady": {"priority": 20, "slo": {"juice": 1.0}},
    "small": {"priority": 10, "slo": {"juice": 1.0}},
}


def register(api: TestClient) -> dict[str, dict[str, Any]]:
    tenant = api.post("/v1/tenants", json={"name": "ads"}, headers=ADMIN).json()
    jobs = {}
    for name, spec in JOBS.items():
        body = {"name": name, **spec, "executors": {"initial": 2, "min": 1, "max": 8}}
        response = api.post("/v1/jobs", json=body, headers=bearer(tenant["token"]))
        assert response.status_code == 201, response.text
        jobs[name] = response.json()
    return jobs


def report(name: str, end: datetime, executors: int) -> dict[str, Any]:
    start = end - timedelta(seconds=ROUND_S)
    busy = 0.9 if name == "slow" else 0.1  # fraction of the executors' time spent busy
    return {
        "window_start": start.isoformat(),
        "window_end": end.isoformat(),
        "executors": max(executors, 1),
        "cores_per_executor": 1,
        "busy_core_ms": busy * ROUND_S * 1000 * max(executors, 1),
        "sources": [{"name": "events", "arrived_rows": 1000, "processed_rows": 1000}],
        "latency_ms": {"mean": 1000.0 if name == "slow" else 50.0},
    }


def run_rounds(
    api: TestClient,
    loop: SchedulerLoop,
    clock: FixedClock,
    jobs: dict[str, dict[str, Any]],
    count: int,
    body: Callable[[str, datetime, int], dict[str, Any]] = report,
) -> None:
    """``count`` rounds, each after a report of every job (``body`` makes it)."""
    for _ in range(count):
        clock.now += timedelta(seconds=ROUND_S)
        for name, job in jobs.items():
            target = api.get(f"/v1/jobs/{job['id']}", headers=ADMIN).json()["executors"]["target"]
            response = api.post(
                f"/v1/jobs/{job['id']}/reports",
                json=body(name, clock.now, target),
                headers=bearer(job["agent_token"]),
            )
            assert response.status_code == 200, response.text
        assert loop.run_round() is not None


def stored_state(engine: Engine) -> dict[str, Any]:
    with make_session_factory(engine)() as session:
        row = session.get(StoredSchedulerState, 1)
        assert row is not None
        return row.state


def test_loop_runs_rounds_and_resumes_from_stored_state(
    api: TestClient, engine: Engine, clock: FixedClock
):
    jobs = register(api)
    loop = new_loop(engine, clock)
    run_rounds(api, loop, clock, jobs, 8)

    with make_session_factory(engine)() as session:
        rounds = session.scalars(select(Round).order_by(Round.number)).all()
        assert [r.number for r in rounds] == list(range(1, 9))
        kinds = [a.kind for a in session.scalars(select(Action).order_by(Action.id))]
        assert kinds.count("admit") == 3, kinds
        reconfigured = session.scalars(select(Action).where(Action.kind == "reconfigure")).all()
        assert [a.job_id for a in reconfigured] == [jobs["slow"]["id"]]
        assert reconfigured[0].to_executors > reconfigured[0].from_executors
        assert session.scalar(select(func.count()).select_from(Allocation)) > 0
        statuses = {j.name: j.status for j in session.scalars(select(Job))}
        assert set(statuses.values()) == {"admitted"}
        assert all(r.max_utility == 60 for r in rounds[-3:])

    before = stored_state(engine)["policy_state"]
    assert jobs["slow"]["id"] in before["blacklist"], before
    assert before["history"], "the reversion history is empty"

    # Stop the loop and start a new one on the same registry: it must carry on, not start over.
    del loop
    restarted = new_loop(engine, clock)
    run_rounds(api, restarted, clock, jobs, 3)

    after = stored_state(engine)["policy_state"]
    assert after["blacklist"][jobs["slow"]["id"]] == before["blacklist"][jobs["slow"]["id"]]
    assert after["history"][: len(before["history"])] == before["history"]
    with make_session_factory(engine)() as session:
        numbers = [r.number for r in session.scalars(select(Round).order_by(Round.number))]
        assert numbers == list(range(1, 12))
        # Blacklisted, the slow job is not reconfigured again after the restart.
        late = session.scalars(select(Action).join(Round).where(Round.number > 8)).all()
        assert all(a.job_id != jobs["slow"]["id"] for a in late)
        assert stored_state(engine)["policy"] == "henge-paper"


def test_a_round_is_skipped_while_another_process_holds_the_round_lock(
    api: TestClient, engine: Engine, clock: FixedClock
):
    register(api)
    loop = new_loop(engine, clock)
    other = make_engine(engine.url.render_as_string(hide_password=False), pool_size=1)
    try:
        with other.connect() as conn, conn.begin():
            # Another replica in the middle of its round.
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ROUND_LOCK_KEY})
            assert loop.run_round() is None
        # Lock released with the other transaction: this replica runs the next round.
        outcome = loop.run_round()
        assert outcome is not None and outcome.number == 1
    finally:
        other.dispose()
    with make_session_factory(engine)() as session:
        assert session.scalar(select(func.count()).select_from(Round)) == 1


def test_dry_run_records_the_plan_but_changes_no_target(
    api: TestClient, engine: Engine, clock: FixedClock
):
    jobs = register(api)
    loop = SchedulerLoop(SqlRoundStore(make_session_factory(engine)), StaticCluster(1, 16, 65536),
                         DryRunRealizer(), core(), clock)  # fmt: skip
    run_rounds(api, loop, clock, jobs, 2)
    with make_session_factory(engine)() as session:
        admits = session.scalars(select(Action).where(Action.kind == "admit")).all()
        assert len(admits) == 3  # the plan is recorded...
        targets = session.scalars(select(Job.target_executors)).all()
        assert set(targets) == {0}  # ...but nothing was applied


@pytest.mark.parametrize("skew_s", [-300, 0, 300])
def test_an_agent_clock_five_minutes_off_is_read_on_its_own_clock_and_judged_fresh(
    api: TestClient, engine: Engine, clock: FixedClock, skew_s: int
):
    """Agents' windows are on their own clocks; the scheduler accepts them as long as each job's
    windows move forward, judges freshness by when it received them, and reads each job's
    sliding window on that job's clock."""
    jobs = register(api)
    loop = new_loop(engine, clock)
    for _ in range(4):
        clock.now += timedelta(seconds=ROUND_S)
        for name, job in jobs.items():
            target = api.get(f"/v1/jobs/{job['id']}", headers=ADMIN).json()["executors"]["target"]
            agent_now = clock.now + timedelta(seconds=skew_s)
            response = api.post(
                f"/v1/jobs/{job['id']}/reports",
                json=report(name, agent_now, target),
                headers=bearer(job["agent_token"]),
            )
            assert response.status_code == 200, response.text
        outcome = loop.run_round()
        assert outcome is not None
    assert not outcome.plan.frozen_jobs  # fresh: received just now, whatever the window says
    with make_session_factory(engine)() as session:
        last = session.scalar(select(Round).order_by(Round.number.desc()).limit(1))
        assert last is not None
        seen = {a.job_id: a.utility for a in session.scalars(
            select(Allocation).where(Allocation.round_id == last.id))}  # fmt: skip
    # The two juice jobs keep up: they earn their priority, measured whatever the skew.
    assert seen[jobs["steady"]["id"]] == 20 and seen[jobs["small"]["id"]] == 10


def _diagnosing_loop(engine: Engine, clock: FixedClock, realizer: Realizer) -> SchedulerLoop:
    return SchedulerLoop(
        SqlRoundStore(make_session_factory(engine)),
        StaticCluster(1, 16, 65536),
        realizer,
        CoreSettings(policy="henge", policy_params={"diagnose": True}),
        clock,
    )


def _with_slow_tasks(name: str, end: datetime, executors: int) -> dict[str, Any]:
    """A report whose executor 2 of "slow" runs its tasks four times as long as its peer."""
    body = report(name, end, executors)
    ids = [str(i) for i in range(1, max(executors, 1) + 1)]
    mean = {"2": 400.0} if name == "slow" else {}
    body["executor_tasks"] = [
        {"id": i, "host": f"node-{i}", "tasks": 10, "task_ms": 10 * mean.get(i, 100.0)} for i in ids
    ]
    return body


def test_a_slow_executor_found_by_henge_is_asked_of_the_agent_in_its_answers(
    api: TestClient, engine: Engine, clock: FixedClock
):
    loop = _diagnosing_loop(engine, clock, AgentRealizer())
    jobs = register(api)
    slow = jobs["slow"]
    run_rounds(api, loop, clock, jobs, 6, _with_slow_tasks)

    with make_session_factory(engine)() as session:
        replaced = session.scalars(select(Action).where(Action.kind == "replace")).all()
        assert [(a.job_id, a.from_executors, a.to_executors) for a in replaced] == [
            (slow["id"], 2, 2)
        ]
        assert replaced[0].reason.startswith("executor(s) 2 replaced: slow executor 2 on node-2")
        row = session.get(Job, slow["id"])
        assert row is not None and row.replace_executors == ["2"]
        asked_at = row.replace_requested_at
        assert asked_at is not None and row.target_executors == 2
    # its agent's answers name the executor from the round that asked, for a window's time
    clock.now = asked_at + timedelta(seconds=10)
    body = _with_slow_tasks("slow", clock.now, 2)
    ack = api.post(f"/v1/jobs/{slow['id']}/reports", json=body, headers=bearer(slow["agent_token"]))
    assert ack.json()["replace_executors"] == ["2"]
    clock.now = asked_at + timedelta(seconds=70)
    body = _with_slow_tasks("slow", clock.now, 2)
    ack = api.post(f"/v1/jobs/{slow['id']}/reports", json=body, headers=bearer(slow["agent_token"]))
    assert ack.json()["replace_executors"] == []


class ResizeOnly:
    """A realizer that resizes but cannot replace executors, as the spark-operator one."""

    name = "resize-only"

    def apply(self, changes: Sequence[Change]) -> Sequence[Change]:
        return changes


def test_where_the_realizer_cannot_replace_a_slow_executor_its_job_is_sized_as_before(
    api: TestClient, engine: Engine, clock: FixedClock
):
    loop = _diagnosing_loop(engine, clock, ResizeOnly())
    jobs = register(api)
    run_rounds(api, loop, clock, jobs, 6, _with_slow_tasks)
    with make_session_factory(engine)() as session:
        kinds = set(session.scalars(select(Action.kind)).all())
        reasons = session.scalars(select(Round.reason)).all()
        row = session.get(Job, jobs["slow"]["id"])
    assert "replace" not in kinds
    assert row is not None and row.replace_executors is None
    assert any("slow executors of slow: the realizer cannot replace" in r for r in reasons)
