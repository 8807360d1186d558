"""`henge demo`, the README's first command, on the embedded defaults (short run)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from rich.console import Console

from scheduler.demo import run_demo


def test_demo_admits_the_jobs_runs_rounds_and_prints_a_summary(tmp_path: Path):
    buffer = StringIO()
    summary = run_demo(seconds=16, console=Console(file=buffer, width=200), data_dir=tmp_path)
    text = buffer.getvalue()
    assert summary["rounds"] >= 5
    assert summary["actions"].get("admit") == 3
    assert {job["status"] for job in summary["jobs"].values()} == {"admitted"}
    assert summary["max_utility"] == 65
    assert "round   1" in text and "where the jobs ended" in text
    assert (tmp_path / "henge-demo.db").exists()
