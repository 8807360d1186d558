"""`henge bench forecast`: a fleet's forecasts fitted at once, and the command's report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from scheduler.bench.forecast_fleet import MINUTES, fleet, measure
from scheduler.cli import app


def test_a_fleet_is_five_weeks_of_minutes_per_job_each_its_own() -> None:
    jobs = fleet(3)
    assert list(jobs) == ["job-00000", "job-00001", "job-00002"]
    assert all(len(rates) == MINUTES and min(rates) > 0 for rates in jobs.values())
    assert not np.allclose(jobs["job-00000"], jobs["job-00001"])
    assert fleet(3) == jobs  # (seeded)


def test_measure_times_the_fits_in_process() -> None:
    figures = measure(2, None)
    assert figures.jobs == 2 and figures.in_process_s > 0 and figures.spark_s is None
    (line,) = figures.lines()
    assert line.startswith("2 jobs of five weeks of minutes:") and "in one process" in line


def test_the_command_writes_the_comparison_and_the_fleet(tmp_path: Path) -> None:
    report = tmp_path / "forecasters.md"
    result = CliRunner().invoke(
        app,
        ["bench", "forecast", "--out", str(report), "--only", "seasonal", "--origins", "2",
         "--fleet", "2"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    text = report.read_text()
    assert text.startswith("# Input-rate forecasters compared")
    assert "| seasonal (ours, numpy) |" in text and "2 jobs of five weeks of minutes" in text
    assert "wrote" in result.output  # (the report's path, which the console may fold)
