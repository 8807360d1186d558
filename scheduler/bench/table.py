"""Markdown tables and comparisons over ``henge sim --json`` documents (:mod:`summary`).

Several summaries of the same (scenario, policy), e.g. different seeds, make one row: each
number is the mean over the runs that have it; time to max utility is the mean over the runs
that reached it, followed by ``(k/n)`` when only k of the n runs did.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HENGE, HENGE_PAPER = "henge", "henge-paper"
FIRST_POLICIES = (HENGE, HENGE_PAPER)
KINDS = ("reconfigure", "reduce", "revert", "total")
MISSING = "n/a"

COLUMNS = (
    "scenario",
    "policy",
    "seeds",
    "utility fraction",
    "oracle fraction",
    "SLO mean",
    "SLO p15",
    "SLO p50",
    "SLO p90",
    "time to max utility (s)",
    "reconfigure",
    "reduce",
    "revert",
    "actions",
    "executor core-hours",
)


@dataclass(frozen=True)
class Row:
    """One (scenario, policy), merged over its runs."""

    scenario: str
    policy: str
    seeds: tuple[Any, ...]
    utility_fraction: float | None
    oracle_fraction: float | None
    slo: dict[str, float | None]
    time_to_max_s: float | None
    reached: int
    actions: dict[str, float | None]
    core_hours: float | None
    integral: float | None

    @property
    def runs(self) -> int:
        return len(self.seeds)


def policy_order(policy: str) -> tuple[int, str]:
    """``henge`` first, ``henge-paper`` second, then the others by name."""
    rank = FIRST_POLICIES.index(policy) if policy in FIRST_POLICIES else len(FIRST_POLICIES)
    return rank, policy


def rows(summaries: Sequence[Mapping[str, Any]]) -> list[Row]:
    """One merged row per (scenario, policy), sorted by scenario then policy."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for summary in summaries:
        groups.setdefault((summary["scenario"], summary["policy"]), []).append(summary)
    keys = sorted(groups, key=lambda k: (k[0], policy_order(k[1])))
    return [_merge(scenario, policy, groups[scenario, policy]) for scenario, policy in keys]


def _mean(values: Sequence[Any]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _merge(scenario: str, policy: str, group: Sequence[Mapping[str, Any]]) -> Row:
    times = [s.get("time_to_max_utility_s") for s in group]
    return Row(
        scenario=scenario,
        policy=policy,
        seeds=tuple(s.get("seed") for s in group),
        utility_fraction=_mean([s["utility"].get("fraction") for s in group]),
        oracle_fraction=_mean([s["utility"].get("oracle_fraction") for s in group]),
        slo={
            key: _mean([s["slo_satisfaction"].get(key) for s in group])
            for key in ("mean", "p15", "p50", "p90")
        },
        time_to_max_s=_mean(times),
        reached=sum(t is not None for t in times),
        actions={kind: _mean([s["actions"].get(kind) for s in group]) for kind in KINDS},
        core_hours=_mean([s.get("executor_core_hours") for s in group]),
        integral=_mean([s["utility"].get("integral") for s in group]),
    )


def _num(value: float | None, digits: int) -> str:
    if value is None or not math.isfinite(value):
        return MISSING
    return f"{value:.{digits}f}"


def _count(value: float | None) -> str:
    if value is None:
        return MISSING
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _time(row: Row, unit: str = "") -> str:
    if row.time_to_max_s is None:
        return "never"
    text = f"{row.time_to_max_s:.0f}{unit}"
    return text if row.reached == row.runs else f"{text} ({row.reached}/{row.runs})"


def markdown_table(summaries: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table, one row per (scenario, policy); see :data:`COLUMNS`."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows(summaries):
        cells = [
            row.scenario,
            row.policy,
            ",".join(str(seed) for seed in row.seeds),
            _num(row.utility_fraction, 3),
            _num(row.oracle_fraction, 3),
            *(_num(row.slo[key], 3) for key in ("mean", "p15", "p50", "p90")),
            _time(row),
            *(_count(row.actions[kind]) for kind in KINDS),
            _num(row.core_hours, 2),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _winner(a: float | None, b: float | None, *, lower_wins: bool) -> str:
    """``henge``, ``henge-paper`` or ``tie``; a missing value (never reached) loses."""
    if a is None and b is None:
        return "tie"
    if a is None:
        return HENGE_PAPER
    if b is None:
        return HENGE
    if math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9):
        return "tie"
    return HENGE if (a < b) == lower_wins else HENGE_PAPER


def compare_henge(summaries: Sequence[Mapping[str, Any]]) -> str:
    """Per scenario, one Markdown list line comparing ``henge`` with ``henge-paper``: fewer
    actions wins, reaching max utility sooner wins (reaching it beats never), a larger utility
    integral wins."""
    by_scenario: dict[str, dict[str, Row]] = {}
    for row in rows(summaries):
        by_scenario.setdefault(row.scenario, {})[row.policy] = row
    lines = []
    for scenario, policies in by_scenario.items():
        henge, paper = policies.get(HENGE), policies.get(HENGE_PAPER)
        if henge is None and paper is None:
            continue
        if henge is None or paper is None:
            missing = HENGE if henge is None else HENGE_PAPER
            lines.append(f"- {scenario}: not compared, no {missing} run")
            continue
        parts = [
            _part(
                "actions",
                _count(henge.actions["total"]),
                _count(paper.actions["total"]),
                _winner(henge.actions["total"], paper.actions["total"], lower_wins=True),
            ),
            _part(
                "time to max utility",
                _time(henge, " s"),
                _time(paper, " s"),
                _winner(henge.time_to_max_s, paper.time_to_max_s, lower_wins=True),
            ),
            _part(
                "utility integral",
                _num(henge.integral, 1),
                _num(paper.integral, 1),
                _winner(henge.integral, paper.integral, lower_wins=False),
            ),
        ]
        lines.append(f"- {scenario}: " + "; ".join(parts))
    return "\n".join(lines) + ("\n" if lines else "")


def _part(what: str, henge: str, paper: str, winner: str) -> str:
    verdict = winner if winner == "tie" else f"{winner} wins"
    return f"{what} {HENGE} {henge} vs {HENGE_PAPER} {paper} ({verdict})"
