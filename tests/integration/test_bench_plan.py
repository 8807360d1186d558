"""``henge bench plan``: a job's options checked against the simulator's truth."""

from __future__ import annotations

import json
from pathlib import Path

from scheduler.bench.plan import GOAL_MAE, check_scenario
from tests.integration.test_cli import henge, ok


def test_the_options_of_a_steady_job_match_the_truth() -> None:
    found = check_scenario("single-congested", every=3, warmup_s=300.0)
    summary = found.summary()
    assert summary["checks"] > 50 and summary["compared"] > 5 * summary["checks"]
    assert summary["mae"] is not None and summary["mae"] <= GOAL_MAE
    assert summary["mae_true_input"] is not None and summary["mae_true_input"] <= GOAL_MAE
    # Every count marked as the smallest that meets the SLO meets it in the simulator.
    assert summary["marked"] > 0 and summary["marked_met"] == summary["marked"]
    assert summary["goal_met"]


def test_the_command_writes_a_row_per_scenario(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    printed = ok(henge("bench", "plan", "--scenarios", "single-congested,stateful", "--json",
                       str(out)))  # fmt: skip
    assert "options against the truth" in printed and "goal (MAE <= 0.05" in printed
    figures = json.loads(out.read_text())
    assert [r["scenario"] for r in figures["scenarios"]] == ["single-congested", "stateful"]
    assert figures["goal_mae"] == GOAL_MAE
    assert all(r["compared"] > 0 and r["mae"] <= GOAL_MAE for r in figures["scenarios"])
    assert figures["goal_met"] is True
