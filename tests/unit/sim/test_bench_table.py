"""Markdown reports over summaries (scheduler.bench.table)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.bench.table import (
    COLUMNS,
    LEADER_COLUMNS,
    TIER_COLUMNS,
    compare_henge,
    leader_table,
    markdown_table,
    policy_matrix,
    rows,
    tier_table,
)


def summary(
    scenario: str,
    policy: str,
    *,
    seed: int = 1,
    fraction: float = 0.9,
    oracle: float | None = 0.95,
    integral: float = 1000.0,
    time_to_max: float | None = 120.0,
    actions: tuple[int, int, int] = (3, 1, 0),
    core_hours: float = 2.5,
    tiers: dict[str, float] | None = None,
    events: list[tuple[float | None, dict[str, float | None]]] | None = None,
) -> dict[str, Any]:
    """A run's JSON; ``events`` are (recovered_after_s, per-tier times) pairs."""
    reconfigure, reduce, revert = actions
    extra: dict[str, Any] = {}
    if tiers is not None:
        extra["tiers"] = {key: {"mean": mean, "jobs": []} for key, mean in tiers.items()}
    if events is not None:
        extra["events"] = [
            {"kind": "spike_start", "at_s": 600.0 * i, "subject": [],
             "recovered_after_s": after, "tiers": per_tier}
            for i, (after, per_tier) in enumerate(events)
        ]  # fmt: skip
    return {
        **extra,
        "scenario": scenario,
        "policy": policy,
        "seed": seed,
        "sim_seconds": 3600.0,
        "utility": {
            "integral": integral,
            "max_integral": integral / fraction,
            "fraction": fraction,
            "oracle_fraction": oracle,
        },
        "slo_satisfaction": {"mean": fraction, "p15": 0.5, "p50": 0.9, "p90": 1.0},
        "time_to_max_utility_s": time_to_max,
        "rounds": 360,
        "actions": {
            "reconfigure": reconfigure,
            "reduce": reduce,
            "revert": revert,
            "replace": 0,
            "total": reconfigure + reduce + revert,
            "admit": 0,
        },
        "executor_core_hours": core_hours,
        "jobs": [],
    }


def table_rows(text: str) -> list[list[str]]:
    lines = text.strip().splitlines()
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def test_table_has_one_row_per_scenario_and_policy_with_henge_first() -> None:
    summaries = [
        summary("b", "static"),
        summary("b", "henge-paper"),
        summary("a", "ds2"),
        summary("b", "henge"),
        summary("a", "dhalion"),
        summary("a", "henge"),
    ]
    text = markdown_table(summaries)
    header = text.splitlines()[0]
    assert [c.strip() for c in header.strip("|").split("|")] == list(COLUMNS)
    assert [(r[0], r[1]) for r in table_rows(text)] == [
        ("a", "henge"),
        ("a", "dhalion"),
        ("a", "ds2"),
        ("b", "henge"),
        ("b", "henge-paper"),
        ("b", "static"),
    ]


def test_table_cells() -> None:
    text = markdown_table(
        [summary("s", "henge", oracle=None, time_to_max=None, actions=(4, 2, 1), core_hours=1.234)]
    )
    (row,) = table_rows(text)
    assert row == [
        "s", "henge", "1", "0.900", "n/a", "0.900", "0.500", "0.900", "1.000", "never",
        "4", "2", "1", "0", "7", "1.23", "n/a", "n/a",
    ]  # fmt: skip


def test_runs_of_several_seeds_are_averaged() -> None:
    merged = rows(
        [
            summary("s", "henge", seed=1, fraction=0.8, time_to_max=100.0, actions=(2, 0, 0)),
            summary("s", "henge", seed=2, fraction=0.6, time_to_max=None, actions=(3, 0, 0)),
        ]
    )
    assert len(merged) == 1
    assert merged[0].utility_fraction.mean == pytest.approx(0.7)
    assert merged[0].time_to_max_s == 100.0
    (row,) = table_rows(markdown_table([summary("s", "henge", seed=1, time_to_max=100.0),
                                        summary("s", "henge", seed=2, time_to_max=None,
                                                actions=(4, 1, 0))]))  # fmt: skip
    assert row[2] == "1,2"
    assert row[9] == "100 (1/2)"
    assert row[14] == "4.5"


def test_compare_henge_names_the_winner_of_each_measure() -> None:
    summaries = [
        summary("spike", "henge", actions=(3, 0, 0), time_to_max=300.0, integral=900.0),
        summary("spike", "henge-paper", actions=(5, 1, 1), time_to_max=None, integral=950.0),
        summary("steady", "henge", actions=(2, 0, 0), time_to_max=60.0, integral=500.0),
        summary("steady", "henge-paper", actions=(2, 0, 0), time_to_max=30.0, integral=500.0),
        summary("lonely", "henge"),
        summary("other", "static"),
    ]
    lines = compare_henge(summaries).strip().splitlines()
    assert lines == [
        "- lonely: not compared, no henge-paper run",
        "- spike: actions henge 3 vs henge-paper 7 (henge wins); "
        "time to max utility henge 300 s vs henge-paper never (henge wins); "
        "utility integral henge 900.0 vs henge-paper 950.0 (henge-paper wins)",
        "- steady: actions henge 2 vs henge-paper 2 (tie); "
        "time to max utility henge 60 s vs henge-paper 30 s (henge-paper wins); "
        "utility integral henge 500.0 vs henge-paper 500.0 (tie)",
    ]


def test_empty_inputs() -> None:
    assert table_rows(markdown_table([])) == []
    assert compare_henge([]) == ""


def test_two_seeds_show_the_mean_and_the_worst_fraction() -> None:
    text = markdown_table(
        [
            summary("s", "henge", seed=1, fraction=0.8, oracle=0.95, events=[(100.0, {})]),
            summary("s", "henge", seed=2, fraction=0.6, oracle=0.9, events=[(300.0, {})]),
        ]
    )
    (row,) = table_rows(text)
    assert row[2] == "1,2"
    assert row[3] == "0.700 (0.600)"  # mean (worst)
    assert row[4] == "0.925 (0.900)"
    assert row[5] == "0.700"  # the others: means only
    assert row[16] == "200"  # recovery: the mean over seeds


def test_recovery_is_the_longest_per_run_and_never_when_an_event_was_not_recovered() -> None:
    recovered = summary("s", "henge", seed=1, events=[(100.0, {}), (400.0, {})])
    stuck = summary("s", "henge", seed=2, events=[(50.0, {}), (None, {})])
    (row,) = table_rows(markdown_table([recovered, stuck]))
    assert row[16] == "400 (1/2)"
    (row,) = table_rows(markdown_table([stuck]))
    assert row[16] == "never"
    (row,) = table_rows(markdown_table([summary("s", "henge", events=[])]))
    assert row[16] == "n/a"  # no events: nothing to recover from


def test_tier_table_has_satisfaction_mean_worst_and_recovery_per_tier() -> None:
    first = summary(
        "s", "henge", seed=1, tiers={"90": 1.0, "10": 0.5},
        events=[(120.0, {"90": 60.0, "10": 120.0}), (30.0, {"90": 30.0, "10": None})],
    )  # fmt: skip
    second = summary(
        "s", "henge", seed=2, tiers={"90": 0.9, "10": 0.7},
        events=[(90.0, {"90": 90.0, "10": 20.0}), (10.0, {"90": 10.0, "10": 10.0})],
    )  # fmt: skip
    text = tier_table([first, second])
    assert text.splitlines()[0] == "| " + " | ".join(TIER_COLUMNS) + " |"
    (row,) = table_rows(text)
    assert row == [
        "s", "henge", "1,2",
        "90: 0.950 (0.900) · 10: 0.600 (0.500)",
        "90: 75 · 10: 20 (1/2)",  # per run the longest: 90 → 60 and 90; 10 → never and 20
    ]  # fmt: skip
    (row,) = table_rows(tier_table([summary("s", "static")]))
    assert row[3:] == ["n/a", "n/a"]


def with_jobs(run: dict[str, Any], actions: list[int], sim_seconds: float) -> dict[str, Any]:
    jobs = [{"name": f"j{i}", "priority": 10.0, "actions": n} for i, n in enumerate(actions)]
    return {**run, "jobs": jobs, "sim_seconds": sim_seconds}


def test_changes_per_job_per_day_count_every_jobs_actions_over_the_simulated_days() -> None:
    half_day = with_jobs(summary("s", "henge", seed=1), [3, 1], 43_200.0)  # 4 / 2 jobs / 0.5 d
    day = with_jobs(summary("s", "henge", seed=2), [2, 0], 86_400.0)  # 2 / 2 jobs / 1 d
    (merged,) = rows([half_day, day])
    assert merged.changes_per_job_day == pytest.approx((4.0 + 1.0) / 2)
    (row,) = table_rows(markdown_table([half_day, day]))
    assert row[COLUMNS.index("changes per job per day")] == "2.5"


def test_the_leader_table_names_the_best_other_policy_and_the_best_baseline() -> None:
    summaries = [
        with_jobs(summary("s", "henge", fraction=0.95, actions=(5, 0, 2)), [4, 2], 86_400.0),
        summary("s", "henge@wide", fraction=0.99),  # a variant of henge is no other policy
        summary("s", "utilitarian", fraction=0.97),
        summary("s", "dhalion", fraction=0.90),
        summary("s", "static", fraction=0.50),
        summary("t", "henge", fraction=0.80),
        summary("t", "ds2", fraction=0.70),
        summary("u", "dhalion", fraction=0.70),  # no henge run: no row
    ]
    text = leader_table(summaries)
    assert [c.strip() for c in text.splitlines()[0].strip("|").split("|")] == list(LEADER_COLUMNS)
    assert table_rows(text) == [
        ["s", "0.950", "0.950", "3.0", "2", "utilitarian 0.970", "dhalion 0.900", "-0.020"],
        ["t", "0.800", "0.950", "n/a", "0", "ds2 0.700", "ds2 0.700", "+0.100"],
    ]


def test_the_policy_matrix_has_a_column_per_policy_and_marks_a_missing_run() -> None:
    summaries = [
        summary("a", "static", fraction=0.5),
        summary("a", "henge", fraction=0.9, seed=1),
        summary("a", "henge", fraction=0.7, seed=2),
        summary("b", "henge", fraction=0.8),
    ]
    text = policy_matrix(summaries)
    assert text.splitlines()[0] == "| scenario | henge | static |"
    assert table_rows(text) == [["a", "0.800", "0.500"], ["b", "0.800", "n/a"]]
