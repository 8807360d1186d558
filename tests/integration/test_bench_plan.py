"""``henge bench plan``: a job's options and the capacity plan checked against the simulator's
truth."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from scheduler.bench.plan import GOAL_CORES, GOAL_MAE, check_scenario
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
    # Steady input: the capacity plan's peak is what the jobs' models say they need now.
    assert summary["tiers"] == 1 and summary["capacity_checks"] > 50
    assert summary["cores_error"] is not None and summary["cores_error"] <= GOAL_CORES


def test_the_capacity_plan_of_tiers_meets_the_truth_and_names_the_tier_dropped_first() -> None:
    summary = check_scenario("tiers-spike", every=6, warmup_s=600.0).summary()
    assert summary["tiers"] == 3 and summary["capacity_checks"] > 100
    assert summary["cores_error"] <= GOAL_CORES and summary["cores_within"] >= 0.8
    assert summary["cores_error_true_input"] <= GOAL_CORES
    # A node short, the oracle lets a tier miss, and the plan names the same one nearly always.
    assert summary["dropped"] > 30 and summary["dropped_agree"] >= 0.9 * summary["dropped"]
    assert summary["capacity_goal_met"]


def test_the_command_writes_a_row_per_scenario(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    printed = ok(henge("bench", "plan", "--scenarios", "single-congested,stateful", "--json",
                       str(out)))  # fmt: skip
    assert "options against the truth" in printed and "goal (MAE <= 0.05" in printed
    assert "capacity against the truth" in printed
    figures = json.loads(out.read_text())
    assert [r["scenario"] for r in figures["scenarios"]] == ["single-congested", "stateful"]
    assert figures["goal_mae"] == GOAL_MAE
    assert all(r["compared"] > 0 and r["mae"] <= GOAL_MAE for r in figures["scenarios"])
    assert figures["goal_met"] is True
    assert figures["goal_cores"] == GOAL_CORES
    assert all(r["tiers"] == 1 and r["capacity_checks"] > 0 for r in figures["scenarios"])


def test_a_new_job_catching_up_is_trusted_sooner_with_steady_error() -> None:
    # On demo the jobs admitted after the start begin behind: without steady_error the error of
    # the windows in which they catch up holds their models from trust after they have.
    before = check_scenario("demo", every=1000, warmup_s=1e9).trusted_after
    after = check_scenario("demo", every=1000, warmup_s=1e9, params={"steady_error": True})
    assert len(before) == len(after.trusted_after) == 4
    assert statistics.median(after.trusted_after.values()) <= statistics.median(before.values()) / 2
    assert "recent error above model_max_error" not in after.held_by
