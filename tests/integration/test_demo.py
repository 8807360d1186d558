"""`henge demo`, the README's first command: the real service on SQLite and a simulated
cluster, with reports through the HTTP API."""

from __future__ import annotations

import sqlite3
from io import StringIO
from pathlib import Path

from rich.console import Console

from scheduler.demo import run_demo


def test_demo_runs_the_service_on_the_simulated_cluster_and_reports_where_it_ended(tmp_path: Path):
    buffer = StringIO()
    outcome = run_demo(console=Console(file=buffer, width=200), data_dir=tmp_path, pace_s=0)
    summary, text = outcome["summary"], buffer.getvalue()
    assert summary["scenario"] == "demo" and summary["policy"] == "henge"
    assert summary["actions"]["admit"] == 4  # every job, the late one too, was admitted
    assert summary["actions"]["reconfigure"] >= 3
    assert summary["utility"]["fraction"] > 0.8
    assert summary["time_to_max_utility_s"] is not None
    assert {job["name"] for job in summary["jobs"]} == {"pageload", "clicks", "wordcount", "fraud"}
    assert "where the jobs ended" in text and f"plot: {tmp_path / 'henge-demo.png'}" in text
    assert (tmp_path / "henge-demo.png").read_bytes()[:4] == b"\x89PNG"
    # Everything went through the registry: rounds, actions and windows are stored in SQLite.
    with sqlite3.connect(tmp_path / "henge-demo.db") as db:
        rounds = db.execute("select count(*) from rounds").fetchone()[0]
        admits = db.execute("select count(*) from actions where kind = 'admit'").fetchone()[0]
        windows = db.execute("select count(*) from metric_windows").fetchone()[0]
    assert rounds == 270 and admits == 4 and windows > 800
