"""Markdown tables and comparisons over ``henge sim --json`` documents (:mod:`summary`).

Several summaries of the same (scenario, policy), e.g. different seeds, make one row: each
number is the mean over the runs that have it, and the utility and oracle fractions are followed
by the worst run's in brackets when there are several. Times (to max utility, to recover) are
the mean over the runs that got there, followed by ``(k/n)`` when only k of the n runs did.

A run's recovery time is the longest over its events (``never`` if it did not recover from one
of them); a run without events has none. Per tier (the jobs of one priority), the same from the
events' per-tier times, and the SLO satisfaction from the summary's ``tiers``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HENGE, HENGE_PAPER = "henge", "henge-paper"
NOT_BASELINES = (HENGE, "utilitarian")
"""Policies that are not baselines to beat: ``henge`` and ``utilitarian`` (its models and solver
without the state machine)."""
FIRST_POLICIES = (HENGE, HENGE_PAPER)
KINDS = ("reconfigure", "reduce", "revert", "replace", "total")
MISSING = "n/a"

COLUMNS = (
    "scenario",
    "policy",
    "seeds",
    "utility fraction mean (worst)",
    "oracle fraction mean (worst)",
    "SLO mean",
    "SLO p15",
    "SLO p50",
    "SLO p90",
    "time to max utility (s)",
    "reconfigure",
    "reduce",
    "revert",
    "replace",
    "actions",
    "executor core-hours",
    "recovery (s)",
    "changes per job per day",
)
TIER_COLUMNS = (
    "scenario",
    "policy",
    "seeds",
    "tier SLO satisfaction mean (worst)",
    "tier recovery (s)",
)


@dataclass(frozen=True)
class Spread:
    """A number over the runs of a row: the mean and the worst (lowest) of those that have it."""

    mean: float | None
    worst: float | None
    runs: int


@dataclass(frozen=True)
class Timed:
    """A time over the runs of a row: the mean over the ``reached`` runs that got there, of
    ``runs`` runs that measure it (0: nothing to measure, e.g. no events)."""

    mean: float | None
    reached: int
    runs: int


@dataclass(frozen=True)
class Row:
    """One (scenario, policy), merged over its runs."""

    scenario: str
    policy: str
    seeds: tuple[Any, ...]
    utility_fraction: Spread
    oracle_fraction: Spread
    slo: dict[str, float | None]
    time_to_max: Timed
    actions: dict[str, float | None]
    core_hours: float | None
    integral: float | None
    recovery: Timed
    tiers: dict[str, Spread]
    """Tier name → SLO satisfaction, highest priority first."""
    tier_recovery: dict[str, Timed]
    changes_per_job_day: float | None
    """Executor count changes per job and simulated day (every job's actions, a move of
    several jobs counting once for each)."""

    @property
    def runs(self) -> int:
        return len(self.seeds)

    @property
    def time_to_max_s(self) -> float | None:
        return self.time_to_max.mean


VARIANT_MARK = "@"
"""``henge@wide`` names a variant of ``henge``: the same policy, run again under its own name
in the bench with settings of its own, so two settings of one policy share one table."""


def base_policy(name: str) -> str:
    """The policy a bench entry runs: ``henge`` for ``henge`` and for ``henge@wide``."""
    return name.split(VARIANT_MARK, 1)[0]


def policy_order(policy: str) -> tuple[int, str, str]:
    """``henge`` first, ``henge-paper`` second, then the others by name; a variant
    (``henge@wide``) right after its policy."""
    base = base_policy(policy)
    rank = FIRST_POLICIES.index(base) if base in FIRST_POLICIES else len(FIRST_POLICIES)
    return rank, base, policy


def rows(summaries: Sequence[Mapping[str, Any]]) -> list[Row]:
    """One merged row per (scenario, policy or variant), sorted by scenario then policy."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for summary in summaries:
        policy = summary.get("variant") or summary["policy"]
        groups.setdefault((summary["scenario"], policy), []).append(summary)
    keys = sorted(groups, key=lambda k: (k[0], policy_order(k[1])))
    return [_merge(scenario, policy, groups[scenario, policy]) for scenario, policy in keys]


def _mean(values: Sequence[Any]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def spread_of(values: Sequence[Any]) -> Spread:
    present = [float(v) for v in values if v is not None]
    return Spread(_mean(present), min(present) if present else None, len(present))


def _timed(values: Sequence[float | None], runs: int) -> Timed:
    return Timed(_mean(values), sum(v is not None for v in values), runs)


def _longest(times: Sequence[float | None]) -> float | None:
    """The longest of a run's recovery times; ``None`` when one of them never came."""
    if any(t is None for t in times):
        return None
    return max(float(t) for t in times if t is not None)


def _tier_names(group: Sequence[Mapping[str, Any]]) -> list[str]:
    names = {key for s in group for key in s.get("tiers", {})}
    return sorted(names, key=float, reverse=True)


def _merge(scenario: str, policy: str, group: Sequence[Mapping[str, Any]]) -> Row:
    with_events = [s["events"] for s in group if s.get("events")]
    tiers = _tier_names(group)
    return Row(
        scenario=scenario,
        policy=policy,
        seeds=tuple(s.get("seed") for s in group),
        utility_fraction=spread_of([s["utility"].get("fraction") for s in group]),
        oracle_fraction=spread_of([s["utility"].get("oracle_fraction") for s in group]),
        slo={
            key: _mean([s["slo_satisfaction"].get(key) for s in group])
            for key in ("mean", "p15", "p50", "p90")
        },
        time_to_max=_timed([s.get("time_to_max_utility_s") for s in group], len(group)),
        actions={kind: _mean([s["actions"].get(kind) for s in group]) for kind in KINDS},
        core_hours=_mean([s.get("executor_core_hours") for s in group]),
        integral=_mean([s["utility"].get("integral") for s in group]),
        recovery=_timed(
            [_longest([e.get("recovered_after_s") for e in events]) for events in with_events],
            len(with_events),
        ),
        tiers={
            key: spread_of([s.get("tiers", {}).get(key, {}).get("mean") for s in group])
            for key in tiers
        },
        tier_recovery={key: _tier_recovery(key, with_events) for key in tiers},
        changes_per_job_day=_mean([changes_per_job_day(s) for s in group]),
    )


def changes_per_job_day(summary: Mapping[str, Any]) -> float | None:
    jobs = summary.get("jobs") or []
    days = float(summary.get("sim_seconds") or 0.0) / 86_400.0
    if not jobs or days <= 0:
        return None
    return sum(int(job.get("actions", 0)) for job in jobs) / len(jobs) / days


def _tier_recovery(key: str, with_events: Sequence[Sequence[Mapping[str, Any]]]) -> Timed:
    """Per run, the longest recovery of tier ``key`` over the events it was present for."""
    per_run = [
        [e["tiers"][key] for e in events if key in e.get("tiers", {})] for events in with_events
    ]
    measured = [times for times in per_run if times]
    return _timed([_longest(times) for times in measured], len(measured))


def _num(value: float | None, digits: int) -> str:
    if value is None or not math.isfinite(value):
        return MISSING
    return f"{value:.{digits}f}"


def _count(value: float | None) -> str:
    if value is None:
        return MISSING
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _time(timed: Timed, unit: str = "") -> str:
    if timed.runs == 0:
        return MISSING
    if timed.mean is None:
        return "never"
    text = f"{timed.mean:.0f}{unit}"
    return text if timed.reached == timed.runs else f"{text} ({timed.reached}/{timed.runs})"


def fraction_text(spread: Spread) -> str:
    """``mean (worst)``, or just the value when one run has it."""
    text = _num(spread.mean, 3)
    return text if spread.runs <= 1 else f"{text} ({_num(spread.worst, 3)})"


def _table(columns: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines.extend("| " + " | ".join(row) + " |" for row in cells)
    return "\n".join(lines) + "\n"


def _seeds(row: Row) -> str:
    return ",".join(str(seed) for seed in row.seeds)


def markdown_table(summaries: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table, one row per (scenario, policy); see :data:`COLUMNS`."""
    cells = [
        [
            row.scenario,
            row.policy,
            _seeds(row),
            fraction_text(row.utility_fraction),
            fraction_text(row.oracle_fraction),
            *(_num(row.slo[key], 3) for key in ("mean", "p15", "p50", "p90")),
            _time(row.time_to_max),
            *(_count(row.actions[kind]) for kind in KINDS),
            _num(row.core_hours, 2),
            _time(row.recovery),
            _num(row.changes_per_job_day, 1),
        ]
        for row in rows(summaries)
    ]
    return _table(COLUMNS, cells)


LEADER_COLUMNS = (
    "scenario",
    "henge utility fraction",
    "henge oracle fraction",
    "changes per job per day",
    "reverts",
    "best other policy",
    "best baseline",
    "henge − best other",
)


def _best(candidates: Sequence[Row]) -> Row | None:
    scored = [r for r in candidates if r.utility_fraction.mean is not None]
    return max(scored, key=lambda r: r.utility_fraction.mean or 0.0) if scored else None


def _named(row: Row | None) -> str:
    return MISSING if row is None else f"{row.policy} {_num(row.utility_fraction.mean, 3)}"


def leader_table(summaries: Sequence[Mapping[str, Any]]) -> str:
    """Per scenario with a ``henge`` run: its fractions, how often it changes each job's
    executors, and the best of the other policies (variants of ``henge`` aside) and of the
    baselines (neither ``henge`` nor ``utilitarian``) by mean utility fraction."""
    by_scenario: dict[str, list[Row]] = {}
    for row in rows(summaries):
        by_scenario.setdefault(row.scenario, []).append(row)
    cells = []
    for scenario, group in by_scenario.items():
        henge = next((r for r in group if r.policy == HENGE), None)
        if henge is None:
            continue
        others = [r for r in group if base_policy(r.policy) != HENGE]
        best = _best(others)
        baseline = _best([r for r in others if base_policy(r.policy) not in NOT_BASELINES])
        lead = (
            None
            if best is None or henge.utility_fraction.mean is None
            else henge.utility_fraction.mean - (best.utility_fraction.mean or 0.0)
        )
        cells.append(
            [
                scenario,
                fraction_text(henge.utility_fraction),
                fraction_text(henge.oracle_fraction),
                _num(henge.changes_per_job_day, 1),
                _count(henge.actions["revert"]),
                _named(best),
                _named(baseline),
                MISSING if lead is None else f"{lead:+.3f}",
            ]
        )
    return _table(LEADER_COLUMNS, cells)


def policy_matrix(summaries: Sequence[Mapping[str, Any]]) -> str:
    """Mean utility fraction, one row per scenario and one column per policy (or variant)."""
    table_rows = rows(summaries)
    policies = sorted({r.policy for r in table_rows}, key=policy_order)
    by_key = {(r.scenario, r.policy): r for r in table_rows}
    scenarios = list(dict.fromkeys(r.scenario for r in table_rows))
    cells = [
        [
            scenario,
            *(
                _num(by_key[scenario, p].utility_fraction.mean, 3)
                if (scenario, p) in by_key
                else MISSING
                for p in policies
            ),
        ]
        for scenario in scenarios
    ]
    return _table(["scenario", *policies], cells)


def tier_table(summaries: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table of SLO satisfaction and recovery per priority tier, one row per
    (scenario, policy), tiers highest priority first; see :data:`TIER_COLUMNS`."""
    cells = [
        [
            row.scenario,
            row.policy,
            _seeds(row),
            " · ".join(f"{key}: {fraction_text(spread)}" for key, spread in row.tiers.items())
            or MISSING,
            " · ".join(
                f"{key}: {_time(timed)}" for key, timed in row.tier_recovery.items() if timed.runs
            )
            or MISSING,
        ]
        for row in rows(summaries)
    ]
    return _table(TIER_COLUMNS, cells)


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
                _time(henge.time_to_max, " s"),
                _time(paper.time_to_max, " s"),
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
