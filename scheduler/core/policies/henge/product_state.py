"""What the product policy ``henge`` remembers between rounds, and its JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from scheduler.core.model import ClusterState
from scheduler.core.policies.henge.budget import Budget
from scheduler.core.policies.henge.costs import ChangeCost, costs_from_json, dump_cost
from scheduler.core.policies.henge.model import JobModel, models_from_json
from scheduler.core.policies.henge.rises import Rises, dump_rises, rises_from_json
from scheduler.core.policy import JSONDict


@dataclass(frozen=True)
class MovedJob:
    """One job of a move: its allocation before and after, and what judging the move needs."""

    before: int
    after: int
    utility_before: float
    rate_before: float | None
    by_model: bool = False
    """The job's trusted model sized the move (a failed growth then costs it the trust)."""
    processed_before: float | None = None
    """Rows per second it processed before the move (a backlogged job is judged on it)."""
    ran_before: int | None = None
    """Executors it ran before the move, when fewer than ``before`` (the others waited for
    room); what it would have earned without the move is judged at this count."""

    @property
    def ran(self) -> int:
        """The executors the job ran before the move."""
        return self.before if self.ran_before is None else self.ran_before


@dataclass(frozen=True)
class Move:
    """The last move, a whole reconfiguration of one or more jobs."""

    at: datetime
    jobs: Mapping[str, MovedJob]
    revert: bool = False
    """The move undid the one before it (it is not judged again)."""
    judged: bool = False
    running_since: datetime | None = None
    """When every moved job first reported its new executor count."""


class Replaced(NamedTuple):
    """A job's last replacement of slow executors."""

    at: float
    """When (epoch seconds)."""
    hosts: tuple[str, ...]
    """The nodes the slow executors ran on."""
    executors: tuple[str, ...] = ()
    """Every executor found slow then (replaced or left for want of room)."""
    blocked_until: float | None = None
    """Set when new executors came up slow on one of those nodes again: the node, not the
    executors, is slow, and the job is not replaced again before this time."""


@dataclass(frozen=True)
class ProductState:
    cluster_state: ClusterState = ClusterState.NOT_CONVERGED
    last_move: Move | None = None
    blacklist: Mapping[str, datetime] = field(default_factory=dict)
    """Jobs not grown again until the time given (growth did not help them)."""
    models: Mapping[str, JobModel] = field(default_factory=dict)
    errors: Mapping[str, float] = field(default_factory=dict)
    """Per job: the moving average of the model's prediction error (fraction of priority)."""
    peaks: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Per job: (recent peak input rate, when it was last updated, epoch seconds)."""
    rises: Mapping[str, Rises] = field(default_factory=dict)
    """Per job: how often its input has lately risen by more than ``headroom`` within
    ``quiesce_s`` (:mod:`~scheduler.core.policies.henge.rises`)."""
    surplus_since: Mapping[str, float] = field(default_factory=dict)
    """Per job: since when (epoch seconds) it has held executors it does not need."""
    short_since: Mapping[str, float] = field(default_factory=dict)
    """Per job: since when (epoch seconds) its reports have shown fewer executors running than
    its allocation."""
    costs: Mapping[str, ChangeCost] = field(default_factory=dict)
    """Per job: what a change of its executors has cost it, and the change being followed
    (:mod:`~scheduler.core.policies.henge.costs`; with ``price_moves`` only)."""
    budgets: Mapping[str, Budget] = field(default_factory=dict)
    """Per job: the changes it had left after its last change
    (:mod:`~scheduler.core.policies.henge.budget`; with ``changes_per_day`` only)."""
    forecast_errors: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Per job: moving averages of the absolute error of its forecast's mean and of the
    seasonal-naive forecast against its measured input (``proactive`` only)."""
    replaced: Mapping[str, Replaced] = field(default_factory=dict)
    """Per job: its last replacement of slow executors, kept ``blacklist_ttl_s`` (``diagnose``)."""
    skewed_at: Mapping[str, float] = field(default_factory=dict)
    """Per job: when (epoch seconds) it was last found skewed, kept ``stabilization_s``: what it
    holds beyond its need once the skew has gone was held for the skew (``diagnose``)."""
    settle_count: int = 0
    best_fraction: float | None = None
    """In ``converged``: the best utility fraction since converging (the drop reference)."""


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _time(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value))


def _opt(value: Any) -> float | None:
    return None if value is None else float(value)


def dump(state: ProductState) -> JSONDict:
    move = state.last_move
    return {
        "cluster_state": state.cluster_state.value,
        "last_move": None
        if move is None
        else {
            "at": _iso(move.at),
            "jobs": {
                k: [
                    j.before,
                    j.after,
                    j.utility_before,
                    j.rate_before,
                    j.by_model,
                    j.processed_before,
                    j.ran_before,
                ]
                for k, j in sorted(move.jobs.items())
            },
            "revert": move.revert,
            "judged": move.judged,
            "running_since": _iso(move.running_since),
        },
        "blacklist": {k: _iso(v) for k, v in sorted(state.blacklist.items())},
        "models": {k: list(v) for k, v in sorted(state.models.items())},
        "errors": dict(sorted(state.errors.items())),
        "peaks": {k: list(v) for k, v in sorted(state.peaks.items())},
        "rises": {k: dump_rises(v) for k, v in sorted(state.rises.items())},
        "surplus_since": dict(sorted(state.surplus_since.items())),
        "short_since": dict(sorted(state.short_since.items())),
        "replaced": {
            k: [v.at, list(v.hosts), list(v.executors), v.blocked_until]
            for k, v in sorted(state.replaced.items())
        },
        "skewed_at": dict(sorted(state.skewed_at.items())),
        "costs": {k: dump_cost(v) for k, v in sorted(state.costs.items())},
        "budgets": {k: list(v) for k, v in sorted(state.budgets.items())},
        "forecast_errors": {k: list(v) for k, v in sorted(state.forecast_errors.items())},
        "settle_count": state.settle_count,
        "best_fraction": state.best_fraction,
    }


def load(data: Mapping[str, Any]) -> ProductState:
    if not data:
        return ProductState()
    raw = data.get("last_move")
    move = None
    if raw is not None:
        at = _time(raw["at"])
        assert at is not None
        move = Move(
            at=at,
            jobs={
                str(k): MovedJob(
                    int(v[0]),
                    int(v[1]),
                    float(v[2]),
                    _opt(v[3]),
                    bool(v[4]),
                    _opt(v[5]) if len(v) > 5 else None,
                    int(v[6]) if len(v) > 6 and v[6] is not None else None,
                )
                for k, v in (raw.get("jobs") or {}).items()
            },
            revert=bool(raw.get("revert", False)),
            judged=bool(raw.get("judged", False)),
            running_since=_time(raw.get("running_since")),
        )
    return ProductState(
        cluster_state=ClusterState(data.get("cluster_state", ClusterState.NOT_CONVERGED)),
        last_move=move,
        blacklist={
            str(k): datetime.fromisoformat(str(v)) for k, v in (data.get("blacklist") or {}).items()
        },
        models=models_from_json(data.get("models")),
        errors={str(k): float(v) for k, v in (data.get("errors") or {}).items()},
        peaks={str(k): (float(v[0]), float(v[1])) for k, v in (data.get("peaks") or {}).items()},
        rises=rises_from_json(data.get("rises")),
        surplus_since={str(k): float(v) for k, v in (data.get("surplus_since") or {}).items()},
        short_since={str(k): float(v) for k, v in (data.get("short_since") or {}).items()},
        replaced={
            str(k): Replaced(float(v[0]), tuple(map(str, v[1])), tuple(map(str, v[2])), _opt(v[3]))
            for k, v in (data.get("replaced") or {}).items()
        },
        skewed_at={str(k): float(v) for k, v in (data.get("skewed_at") or {}).items()},
        costs=costs_from_json(data.get("costs")),
        budgets={
            str(k): Budget(float(v[0]), float(v[1])) for k, v in (data.get("budgets") or {}).items()
        },
        forecast_errors={
            str(k): (float(v[0]), float(v[1]))
            for k, v in (data.get("forecast_errors") or {}).items()
        },
        settle_count=int(data.get("settle_count", 0)),
        best_fraction=_opt(data.get("best_fraction")),
    )
