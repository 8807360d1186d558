"""The agent without Spark: a fake application (``SparkControl``) and a scheduler the test
steers. Runs in the ordinary suite (no ``spark`` mark): failure behaviour, bounds, the choice of
executors to remove, busy time, the report body, and the agent's dependencies."""

from __future__ import annotations

import ast
import logging
import math
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from henge_agent import AgentRefused, check_application
from henge_agent.agent import iso
from henge_agent.estimator import Batch, latency_ms
from henge_agent.progress import ProgressBook, row_backlog, source_name
from henge_agent.settings import settings_from
from henge_agent.spark_control import StageRun
from scheduler.api.schemas import ReportIn
from scheduler.core.latency import estimate_latency_ms
from scheduler.core.report import BatchReport
from scheduler.core.slo import LatencyStat
from scheduler.testing.fake_api import FakeScheduler
from tests.agent_doubles import FakeSpark, make_agent, progress

AGENT_DIR = Path(__file__).resolve().parents[2] / "agent" / "henge_agent"


# ---- dependencies ---------------------------------------------------------------------------


def test_the_agent_imports_only_pyspark_and_the_standard_library() -> None:
    for path in sorted(AGENT_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                allowed = (
                    top in sys.stdlib_module_names
                    or top == "pyspark"
                    or name == "henge_agent"
                    or name.startswith("henge_agent.")
                )
                assert allowed, f"{path.name} imports {name}"


def test_importing_the_agent_loads_no_third_party_module() -> None:
    code = (
        "import sys, henge_agent, henge_agent.agent, henge_agent.listener;"
        "import henge_agent.spark_control;"
        "bad = sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)"
        " - {'henge_agent', 'pyspark', 'py4j', '__main__', '_distutils_hack'});"
        "print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""


# ---- refusal ----------------------------------------------------------------------------------


def test_refuses_dynamic_allocation_with_a_message_saying_so() -> None:
    with pytest.raises(AgentRefused) as refused:
        check_application({"spark.dynamicAllocation.enabled": "true"})
    message = str(refused.value)
    assert "spark.dynamicAllocation.enabled=true" in message
    assert "--conf spark.dynamicAllocation.enabled=false" in message
    check_application({"spark.dynamicAllocation.enabled": "false"})
    check_application({})


def test_bounds_must_be_consistent() -> None:
    with pytest.raises(ValueError, match="min_executors"):
        make_agent(FakeSpark(), "http://127.0.0.1:9", min_executors=3, max_executors=2)


# ---- reports ----------------------------------------------------------------------------------


def test_a_report_carries_batches_latency_sources_busy_time_and_parallelism() -> None:
    fake = FakeScheduler(target=2).start()
    try:
        spark = FakeSpark()
        spark.add("0", task_ms=1000)
        spark.add("1", task_ms=500)
        agent, book = make_agent(spark, fake.url)
        agent._baseline()
        t0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
        book.record(progress(7, t0, 200, end_offset=1000, latest=1300))
        book.record(progress(7, t0, 200, end_offset=1000, latest=1300))  # repeated event
        book.record(progress(8, t0 + timedelta(seconds=2), 300, end_offset=1300, latest=1450))
        spark.add("0", task_ms=4000)  # 3000 ms more on executor 0
        spark.add("1", task_ms=2500)  # 2000 ms more on executor 1
        agent.tick(now=(t0 + timedelta(seconds=10)).timestamp())
    finally:
        fake.stop()
    (body,) = fake.reports
    report = ReportIn.model_validate(body)
    assert report.executors == 2
    assert report.busy_core_ms == 5000
    assert report.max_parallelism == 4
    assert [b.rows for b in report.batches or []] == [200, 300]
    assert [b.backlog_at_start for b in report.batches or []] == [300, 150]
    (source,) = report.sources
    assert source.name == "pageload/0:PythonMicroBatchStreamWithAdmissionControl"
    assert (source.processed_rows, source.backlog_rows, source.arrived_rows) == (500, 150, None)
    assert report.latency_ms is not None and report.latency_ms.mean > 1500
    assert body["state"] == {"rows": 12.0, "memory_bytes": 9000.0}
    assert agent.applied == 2


def test_rate_source_arrivals_are_its_rate_times_the_window() -> None:
    book = ProgressBook()
    event = progress(0, datetime(2026, 11, 22, 12, 0, tzinfo=UTC), 100, 0, 0)
    event["sources"][0].update(
        description="RateStreamV2[rowsPerSecond=50, rampUpTimeSeconds=0, numPartitions=default",
        startOffset="0", endOffset="2", latestOffset="2",
    )  # fmt: skip
    book.record(event)
    agent, _ = make_agent(FakeSpark(), "http://127.0.0.1:9")
    agent.book = book
    report = agent.build_report(0.0, 10.0)
    (source,) = report["sources"]
    assert source["arrived_rows"] == 500.0
    assert "backlog_rows" not in source
    # A later window with no finished batch still counts the arrivals.
    (later,) = agent.build_report(10.0, 20.0)["sources"]
    assert (later["arrived_rows"], later["processed_rows"]) == (500.0, 0.0)


def test_backlog_from_row_offsets_only() -> None:
    kafka = "KafkaV2[Subscribe[events]]"
    assert row_backlog(kafka, '{"events":{"0":100,"1":50}}', '{"events":{"0":160,"1":90}}') == 100
    assert row_backlog("RateStreamV2[rowsPerSecond=5", "3", "4") is None
    assert row_backlog("MySource", '{"rows": 10}', '{"rows": 25}') == 15
    assert row_backlog("MySource", '{"ts": 10}', '{"ts": 25}') is None
    assert row_backlog("MySource", None, '{"rows": 25}') is None
    assert source_name("q", 0, "org.apache.spark.Foo@1a2b3c4d") == "q/0:Foo"


# ---- the scheduler goes away ------------------------------------------------------------------


def test_scheduler_down_keeps_the_executors_and_retries_with_backoff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("henge_agent.agent.random.uniform", lambda a, b: 1.0)
    spark = FakeSpark()
    for i in range(3):
        spark.add(str(i))
    fake = FakeScheduler(target=1).start()
    port = fake.port
    fake.stop()  # nothing listens on the port: connection refused
    now = 1_000.0
    agent, _ = make_agent(
        spark, f"http://127.0.0.1:{port}", sub_window_s=10.0, clock=lambda: now - 10
    )
    agent.tick(now)
    assert agent.stats.reports_failed == 1
    assert agent._next_attempt == now + 10
    agent.tick(now + 5)  # not yet time to retry: queued only
    assert agent.stats.reports_failed == 1
    agent.tick(now + 10)
    assert agent.stats.reports_failed == 2
    assert agent._next_attempt == now + 10 + 20  # doubled
    assert spark.requested == [] and spark.killed == []  # executors untouched
    assert len(agent._pending) == 3

    back = FakeScheduler(target=2, port=port).start()
    try:
        agent.flush(now + 60)
    finally:
        back.stop()
    assert agent.stats.reports_sent == 3
    assert [r["window_end"] for r in back.reports] == sorted(r["window_end"] for r in back.reports)
    assert agent.applied == 2 and spark.killed == [["2"]]


def test_an_unreachable_scheduler_never_raises_into_the_job(
    caplog: pytest.LogCaptureFixture,
) -> None:
    spark = FakeSpark(broken=True)  # even Spark's status calls fail
    agent, book = make_agent(spark, "http://127.0.0.1:9", sub_window_s=0.05)
    book.record({"not": "a progress"})
    with caplog.at_level(logging.WARNING, logger="henge.agent"):
        agent.start()
        time.sleep(0.5)
        assert agent.running
        agent.stop()
    assert not agent.running
    assert agent.stats.reports_failed >= 1 or "failed" in caplog.text


def test_refused_reports_are_dropped_and_auth_errors_retried() -> None:
    fake = FakeScheduler(target=1).start()
    try:
        agent, _ = make_agent(FakeSpark(), fake.url, clock=lambda: 90.0)
        fake.status = 422
        agent.tick(100.0)
        assert (agent.stats.reports_dropped, agent.stats.reports_failed) == (1, 0)
        fake.status = 401
        agent.tick(110.0)
        assert agent.stats.reports_failed == 1 and len(agent._pending) == 1
        fake.status = 200
        agent.flush(200.0)
        assert agent.stats.reports_sent == 1 and agent.applied == 1
    finally:
        fake.stop()


def test_windows_queued_while_the_scheduler_was_down_go_in_one_batch() -> None:
    fake = FakeScheduler(target=1).start()
    try:
        agent, _ = make_agent(FakeSpark(), fake.url, clock=lambda: 90.0)
        fake.status = 503
        for k in range(3):
            agent.tick(100.0 + 10 * k)
        assert len(agent._pending) == 3 and agent.stats.reports_failed >= 1
        fake.status = 200
        fake.paths.clear()
        fake.reports.clear()
        ends = [r["window_end"] for r in agent._pending]
        fake.refuse = {ends[1]}  # the scheduler refuses one of them
        agent.flush(200.0)
        assert fake.paths == ["/v1/jobs/job-1/reports/batch"]
        assert [r["window_end"] for r in fake.reports] == ends
        assert (agent.stats.reports_sent, agent.stats.reports_dropped) == (2, 1)
        assert not agent._pending and agent.applied == 1
    finally:
        fake.stop()


def test_a_scheduler_without_the_batch_route_gets_one_window_at_a_time() -> None:
    fake = FakeScheduler(target=1).start()
    fake.batch_route = False
    try:
        agent, _ = make_agent(FakeSpark(), fake.url, clock=lambda: 90.0)
        fake.status = 503
        agent.tick(100.0)
        agent.tick(110.0)
        fake.status = 200
        fake.paths.clear()
        agent.flush(200.0)
        single = "/v1/jobs/job-1/reports"
        assert fake.paths == [f"{single}/batch", single, single]
        assert agent.stats.reports_sent == 2 and not agent._pending
        # Once it knows, it does not ask for the batch route again.
        fake.status = 503
        agent.tick(210.0)
        agent.tick(220.0)
        fake.status = 200
        fake.paths.clear()
        agent.flush(300.0)
        assert fake.paths == [single, single]
    finally:
        fake.stop()


# ---- targets ----------------------------------------------------------------------------------


def test_targets_outside_the_bounds_are_ignored_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    spark = FakeSpark()
    spark.add("0")
    spark.add("1")
    agent, _ = make_agent(spark, "http://127.0.0.1:9", min_executors=1, max_executors=3)
    with caplog.at_level(logging.WARNING, logger="henge.agent"):
        assert not agent.apply_target(9)
        assert not agent.apply_target(9)
        assert not agent.apply_target(0)
    assert spark.requested == [] and spark.killed == []
    assert agent.stats.targets_ignored == 3
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "henge agent: ignoring target 9: outside the job's bounds [1, 3]; keeping the current "
        "executors",
        "henge agent: ignoring target 0: outside the job's bounds [1, 3]; keeping the current "
        "executors",
    ]
    assert agent.apply_target(3) and spark.requested == [3]


def test_shrinking_removes_idle_executors_first_newest_first() -> None:
    spark = FakeSpark()
    spark.add("1", tasks=2, added=1)
    spark.add("2", tasks=0, added=2)
    spark.add("3", tasks=1, added=3)
    spark.add("4", tasks=0, added=4)
    agent, _ = make_agent(spark, "http://127.0.0.1:9")
    assert agent.apply_target(1)
    assert spark.killed == [["4", "2", "3"]]
    assert spark.requested == [1]


def test_the_same_target_again_removes_a_surplus_spark_still_has() -> None:
    spark = FakeSpark()
    spark.add("1")
    agent, _ = make_agent(spark, "http://127.0.0.1:9")
    agent.apply_target(1)
    for i in range(2, 5):  # a standalone master launched more before the limit took hold
        spark.add(str(i), added=i)
    assert agent.apply_target(1)
    assert spark.killed == [["4", "3", "2"]]
    assert not agent.apply_target(1)  # nothing left to do
    assert spark.requested == [1, 1]


# ---- the estimator is the scheduler's ---------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.05, 20), st.floats(0.01, 30), st.integers(1, 5000), st.integers(0, 3000)
        ),
        min_size=1,
        max_size=8,
    )
)
def test_latency_matches_the_scheduler_estimator(
    spec: list[tuple[float, float, int, int]],
) -> None:
    t = 1_800_000_000.0
    batches, reports = [], []
    for raw_gap, raw_duration, rows, backlog in spec:
        # Spark's times are whole milliseconds (and the server's datetimes whole microseconds).
        gap, duration = round(raw_gap, 3), round(raw_duration, 3)
        t += gap
        batches.append(Batch(t, t + duration, rows, None, backlog or None))
        start = datetime.fromtimestamp(t, UTC)
        reports.append(
            BatchReport(start, start + timedelta(seconds=duration), rows, backlog or None)
        )
    ours = latency_ms(batches)
    assert ours is not None
    for stat, key in (
        (LatencyStat.MEAN, "mean"),
        (LatencyStat.P95, "p95"),
        (LatencyStat.P99, "p99"),
    ):
        theirs = estimate_latency_ms(reports, stat)
        assert theirs is not None
        assert ours[key] == pytest.approx(theirs, rel=1e-6, abs=1e-2)


def test_report_only_agents_record_the_target_and_leave_spark_alone() -> None:
    spark = FakeSpark()
    spark.add("1")
    spark.add("2")
    agent, _ = make_agent(spark, "http://127.0.0.1:9", resize=False)
    assert not agent.apply_target(5)
    assert agent.applied == 5
    assert spark.requested == [] and spark.killed == []


@pytest.mark.parametrize(("sub_window_s", "kept"), [(10.0, 30), (60.0, 6), (1.0, 300)])
def test_windows_are_queued_for_five_minutes_of_outage_and_older_ones_dropped(
    sub_window_s: float, kept: int
) -> None:
    agent, _ = make_agent(
        FakeSpark(), "http://127.0.0.1:9", sub_window_s=sub_window_s, clock=lambda: 0.0
    )
    for k in range(kept + 2):
        agent._next_attempt = math.inf  # still backing off: queued only
        agent.tick(sub_window_s * (k + 1))
    assert len(agent._pending) == kept and agent.stats.reports_dropped == 2
    assert agent._pending[0]["window_end"] == iso(sub_window_s * 3)  # the oldest two went


def test_an_executor_lost_without_the_agent_is_counted_and_asked_for_again() -> None:
    spark = FakeSpark()
    for i in range(3):
        spark.add(str(i))
    agent, _ = make_agent(spark, "http://127.0.0.1:9")
    agent.apply_target(3)
    assert spark.requested == [3] and agent.stats.executors_lost == 0

    spark.pool["1"] = replace(spark.pool["1"], active=False)  # its process died
    agent.apply_target(3)  # the same target with the next answer
    assert agent.stats.executors_lost == 1
    assert spark.requested == [3, 3] and len(spark.live_executor_ids()) == 3

    agent.apply_target(2)  # the agent removes one itself: not a loss
    agent.apply_target(2)
    assert agent.stats.executors_lost == 1 and len(spark.killed) == 1
    assert spark.requested == [3, 3, 2]


def test_a_report_carries_each_executors_tasks_and_each_stages_figures() -> None:
    fake = FakeScheduler(target=2).start()
    try:
        spark = FakeSpark()
        spark.add("1", task_ms=1000, done=10, host="10.0.0.5")
        spark.add("2", task_ms=1000, done=10)
        agent, _ = make_agent(spark, fake.url)
        agent._baseline()
        spark.add("1", task_ms=3000, done=30, host="10.0.0.5")  # 20 tasks of 100 ms
        spark.add("2", task_ms=3000, done=15)  # 5 tasks of 400 ms
        spark.stages = [
            StageRun(4, "start at app.py:9", 8, 100.0, 110.0, 0.125),
            StageRun(5, "start at app.py:9", 8, 120.0, 900.0, 0.75),
            StageRun(6, "start at app.py:9", 200, 10.0, 12.0, None),
        ]
        agent.tick(now=datetime(2026, 11, 22, 12, 0, 10, tzinfo=UTC).timestamp())
        spark.stages.append(StageRun(7, "start at app.py:9", 8, 100.0, 100.0, 0.125))
        agent.tick(now=datetime(2026, 11, 22, 12, 0, 20, tzinfo=UTC).timestamp())
    finally:
        fake.stop()
    first, second = fake.reports
    assert first["executor_tasks"] == [
        {"id": "1", "tasks": 20, "task_ms": 2000.0, "running": 0, "host": "10.0.0.5"},
        {"id": "2", "tasks": 5, "task_ms": 2000.0, "running": 0},
    ]
    assert first["stages"] == [
        {"name": "start at app.py:9 (200 tasks)", "runs": 1, "tasks": 200,
         "median_task_ms": 10.0, "max_task_ms": 12.0},
        {"name": "start at app.py:9 (8 tasks)", "runs": 2, "tasks": 8, "median_task_ms": 110.0,
         "max_task_ms": 505.0, "largest_partition_share": 0.4375},
    ]  # fmt: skip
    ReportIn.model_validate(first)  # (the scheduler takes it)
    assert "executor_tasks" not in second  # no task finished since
    assert [s["runs"] for s in second["stages"]] == [1]  # only the stage finished since


def test_task_figures_can_be_turned_off() -> None:
    fake = FakeScheduler(target=1).start()
    try:
        spark = FakeSpark()
        spark.add("1", done=0)
        agent, _ = make_agent(spark, fake.url, task_figures=False)
        agent._baseline()
        spark.add("1", task_ms=500, done=5)
        spark.stages = [StageRun(1, "s", 2, 1.0, 1.0, 0.5)]
        agent.tick(now=datetime(2026, 11, 22, 12, 0, 10, tzinfo=UTC).timestamp())
    finally:
        fake.stop()
    (body,) = fake.reports
    assert "executor_tasks" not in body and "stages" not in body
    conf = {"spark.henge.url": "http://h:8080", "spark.henge.jobId": "j"}
    environ = {"HENGE_AGENT_TOKEN": "hga_secret"}
    assert (
        settings_from({**conf, "spark.henge.taskFigures": "false"}, environ).task_figures is False
    )
    assert settings_from(conf, environ).task_figures is True


def test_executors_the_scheduler_finds_slow_are_stopped_once_and_the_total_asked_again() -> None:
    fake = FakeScheduler(target=3).start()
    try:
        spark = FakeSpark()
        for i in ("1", "2", "3"):
            spark.add(i)
        agent, _ = make_agent(spark, fake.url)
        agent.tick(now=datetime(2026, 11, 22, 12, 0, 10, tzinfo=UTC).timestamp())
        assert spark.killed == [] and agent.applied == 3

        fake.replace = ["2", "9"]  # 9: not (or no longer) running
        agent.tick(now=datetime(2026, 11, 22, 12, 0, 20, tzinfo=UTC).timestamp())
        assert spark.killed == [["2"]]
        assert spark.requested[-1] == 3 and len(spark.live_executor_ids()) == 3
        assert agent.stats.executors_replaced == 1 and agent.stats.executors_lost == 0

        # the answers go on naming them for a while: each is stopped once
        agent.tick(now=datetime(2026, 11, 22, 12, 0, 30, tzinfo=UTC).timestamp())
        assert spark.killed == [["2"]] and agent.stats.executors_replaced == 1
    finally:
        fake.stop()


def test_a_report_only_agent_replaces_nothing() -> None:
    spark = FakeSpark()
    spark.add("1")
    agent, _ = make_agent(spark, "http://127.0.0.1:9", resize=False)
    agent.apply_target(1)
    assert agent.replace(["1"]) == [] and spark.killed == []
