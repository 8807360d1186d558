"""Markdown reports over summaries (scheduler.bench.table)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.bench.table import COLUMNS, compare_henge, markdown_table, rows


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
) -> dict[str, Any]:
    reconfigure, reduce, revert = actions
    return {
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
        "4", "2", "1", "7", "1.23",
    ]  # fmt: skip


def test_runs_of_several_seeds_are_averaged() -> None:
    merged = rows(
        [
            summary("s", "henge", seed=1, fraction=0.8, time_to_max=100.0, actions=(2, 0, 0)),
            summary("s", "henge", seed=2, fraction=0.6, time_to_max=None, actions=(3, 0, 0)),
        ]
    )
    assert len(merged) == 1
    assert merged[0].utility_fraction == pytest.approx(0.7)
    assert merged[0].time_to_max_s == 100.0
    (row,) = table_rows(markdown_table([summary("s", "henge", seed=1, time_to_max=100.0),
                                        summary("s", "henge", seed=2, time_to_max=None,
                                                actions=(4, 1, 0))]))  # fmt: skip
    assert row[2] == "1,2"
    assert row[9] == "100 (1/2)"
    assert row[13] == "4.5"


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
