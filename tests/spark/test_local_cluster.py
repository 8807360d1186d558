"""`python -m scheduler.spark start|status|stop`: a cluster that outlives the command, recorded in a
state file, and stopped by exactly the processes it started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler.spark.local_cluster import Daemon, LocalCluster, _alive
from tests.spark.conftest import ROOT, spark_unavailable

pytestmark = pytest.mark.spark


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler.spark", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


def test_start_status_stop_through_the_state_file(tmp_path: Path) -> None:
    why = spark_unavailable()
    if why:
        pytest.skip(f"real Spark unavailable: {why}")
    state = tmp_path / "cluster.json"
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        started = run("--state-file", str(state), "start", "--cores", "2", "--memory", "1g")
        assert started.returncode == 0, started.stderr
        assert "master  spark://127.0.0.1:" in started.stdout
        cluster = LocalCluster.from_json(state.read_text())
        pids = [d.pid for d in cluster.daemons]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        assert Path(cluster.base_dir or "", "logs", "master.log").exists()

        status = run("--state-file", str(state), "status")
        assert status.returncode == 0
        workers = json.loads(status.stdout)["workers"]
        assert [(w["state"], w["cores"], w["memory"]) for w in workers] == [("ALIVE", 2, 1024)]

        again = run("--state-file", str(state), "start")
        assert again.returncode == 0 and "already running" in again.stdout

        stopped = run("--state-file", str(state), "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert not any(_alive(p) for p in pids)
        assert not state.exists()
        assert not Path(cluster.base_dir or "").exists()
        assert bystander.poll() is None  # nothing else was touched
        assert run("--state-file", str(state), "stop").returncode == 0
        assert run("--state-file", str(state), "status").returncode == 1
    finally:
        bystander.kill()
        bystander.wait()
        if state.exists():
            LocalCluster.from_json(state.read_text()).stop(remove_dir=True)


def test_a_recorded_pid_that_is_not_ours_is_left_alone(tmp_path: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        stale = LocalCluster(base_dir=str(tmp_path))
        stale.daemons = [Daemon("master", other.pid, "")]
        stale.stop(grace_s=1)
        assert other.poll() is None and os.path.exists(f"/proc/{other.pid}")
    finally:
        other.kill()
        other.wait()
