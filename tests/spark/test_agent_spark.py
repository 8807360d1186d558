"""The agent inside a real PySpark driver on the local standalone cluster, against a scheduler
the test steers (and takes down): reports that the API accepts, live resizing, an unreachable
scheduler, targets outside the job's bounds, and the refusal under dynamic allocation. The
drivers run the installed henge-agent wheel (``driver_python``), the token read from a file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from scheduler.api.schemas import ReportIn
from scheduler.spark.local_cluster import LocalCluster
from scheduler.testing.fake_api import FakeScheduler
from tests.spark.conftest import (
    EXAMPLES,
    ROOT,
    assert_agent_from_wheel,
    driver_env,
    start_app,
    wait_for,
)

pytestmark = pytest.mark.spark


def test_agent_reports_resizes_and_rides_out_failures(
    spark_cluster: LocalCluster, tmp_path: Path, driver_python: Path
) -> None:
    fake = FakeScheduler(target=2).start()
    token_file = tmp_path / "agent-token"  # as a Kubernetes Secret is mounted
    token_file.write_text("hga_test\n")
    app = start_app(
        "pageload",
        [
            "--master", spark_cluster.master_url,
            "--source", "generator",
            "--rate", "40",
            "--cost-us", "2000",
            "--max-rows-per-batch", "400",
            "--partitions", "4",
            "--duration-s", "400",
            "--henge-url", fake.url,
            "--job-id", "job-1",
            "--sub-window-s", "2",
            "--min-executors", "1",
            "--max-executors", "3",
            "--initial-executors", "1",
        ],
        tmp_path,
        driver_python,
        name="agent-pageload",
        env={"HENGE_AGENT_TOKEN_FILE": str(token_file)},
    )  # fmt: skip
    try:
        wait_for(
            "the target of 2 executors in Spark",
            lambda: (s := app.status()).get("executors") == 2 and (s.get("last_batch") or 0) >= 2,
            180,
            (app,),
        )
        assert_agent_from_wheel(app, driver_python)
        # Every report is a body the API accepts, with what the scheduler needs in it.
        bodies = [ReportIn.model_validate(r) for r in fake.reports]
        assert fake.tokens == {"Bearer hga_test"}
        assert all(b.window_end > b.window_start for b in bodies)
        assert any(b.batches for b in bodies)
        assert any(b.latency_ms is not None and b.latency_ms.mean for b in bodies)
        assert any(b.busy_core_ms > 0 for b in bodies)
        assert any(b.max_parallelism == 4 for b in bodies)
        sources = [s for b in bodies for s in b.sources]
        assert sources and all(s.backlog_rows is not None for s in sources)
        assert any(s.processed_rows > 0 for s in sources)
        # Task figures: each executor's finished tasks and their run time, on its node; each
        # stage's median and longest task and its largest partition's share of the records.
        # (an executor running tasks that finished none in a window is listed with 0 tasks)
        tasks = [e for b in bodies for e in b.executor_tasks or [] if e.tasks > 0]
        listed = [e for b in bodies for e in b.executor_tasks or []]
        assert all(e.tasks > 0 or (e.running or 0) > 0 for e in listed)
        assert tasks and all(e.task_ms >= 0 and e.host for e in tasks)
        assert {e.id for e in tasks} <= {str(i) for i in range(20)}
        stages = [s for b in bodies for s in b.stages or []]
        assert stages and all(0 < s.median_task_ms <= s.max_task_ms for s in stages)
        assert any(s.tasks == 4 and s.largest_partition_share is not None for s in stages)

        # The scheduler names an executor to replace: the agent stops it once and Spark starts
        # another, the job's count unchanged.
        old = spark_cluster.executor_pids(app.name)
        fake.replace = [str(max(int(e.id) for e in tasks[-2:]))]
        replaced = wait_for(
            "the named executor replaced by a new one",
            lambda: (
                (s := app.status())["agent"]["executors_replaced"] == 1
                and s["executors"] == 2
                and len(pids := spark_cluster.executor_pids(app.name)) == 2
                and set(pids) != set(old)
                and s
            ),
            120,
            (app,),
        )
        assert replaced["agent"]["executors_lost"] == 0
        fake.replace = []

        # The scheduler goes away: the job keeps running on the executors it has.
        fake.stop()
        before = app.status()
        wait_for(
            "reports to fail",
            lambda: (app.status().get("agent") or {}).get("reports_failed", 0) >= 2,
            60,
            (app,),
        )
        down = wait_for(
            "more batches while the scheduler is down",
            lambda: (s := app.status()).get("last_batch", 0) >= before["last_batch"] + 2 and s,
            90,
            (app,),
        )
        assert down["executors"] == 2
        assert down["target"] == 2

        # It comes back answering a target outside the job's bounds: ignored, with a log line.
        fake.target = 9
        fake.start()
        wait_for(
            "the agent to reach the scheduler again and ignore target 9",
            lambda: (app.status().get("agent") or {}).get("targets_ignored", 0) >= 1,
            120,
            (app,),
        )
        assert app.status()["executors"] == 2
        assert "ignoring target 9: outside the job's bounds [1, 3]" in app.log_tail(200_000)

        # A target inside the bounds is applied again: shrink to 1, an idle executor first.
        fake.target = 1
        wait_for(
            "Spark to shrink to 1 executor",
            lambda: app.status().get("executors") == 1,
            60,
            (app,),
        )
        assert app.alive()
    finally:
        app.stop()
        fake.stop()


def test_agent_refuses_to_start_under_dynamic_allocation(
    tmp_path: Path, driver_python: Path
) -> None:
    result = subprocess.run(
        [
            str(driver_python), str(EXAMPLES / "wordcount" / "app.py"),
            "--master", "local[1]",
            "--source", "rate",
            "--dynamic-allocation",
            "--henge-url", "http://127.0.0.1:9",
            "--job-id", "job-1",
            "--token", "hga_test",
            "--checkpoint", str(tmp_path / "checkpoint"),
        ],
        cwd=ROOT,
        env=driver_env(driver_python),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Henge agent refused to start: spark.dynamicAllocation.enabled=true" in result.stderr
    assert "spark.dynamicAllocation.enabled=false" in result.stderr
