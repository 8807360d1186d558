"""What Henge remembers between rounds, and its JSON form.

All records are frozen; a round builds a new state and shares whatever did not change (the
history's configurations in particular, which hold one entry per job).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from scheduler.core.model import ClusterState
from scheduler.core.policies.henge.model import JobModel, models_from_json
from scheduler.core.policy import JSONDict


class Step(StrEnum):
    """What Henge did last (finer than :class:`~scheduler.core.model.ActionKind`)."""

    RECONFIGURE = "reconfigure"
    REDUCE = "reduce"
    REVERT = "revert"
    GIVE_BACK = "give_back"
    UNDO_GIVE_BACK = "undo_give_back"


@dataclass(frozen=True)
class Configuration:
    """Every counted job's executors at a settled moment, and the utility they earned."""

    at: datetime
    allocations: Mapping[str, int]
    total_utility: float
    max_utility: float

    @property
    def fraction(self) -> float:
        return self.total_utility / self.max_utility if self.max_utility > 0 else 1.0


@dataclass(frozen=True)
class LastAction:
    """The most recent action, with what judging it needs."""

    step: Step
    at: datetime
    job_id: str | None = None
    utilities_before: Mapping[str, float] = field(default_factory=dict)
    """Every counted job's utility when the action was taken (reconfigure and give-back)."""
    executors_before: Mapping[str, int] = field(default_factory=dict)
    """The changed jobs' executors before the action."""
    executor_cores: int = 1
    executor_memory_mb: int = 0
    """Executor size of the reconfigured job (the size cluster congestion is judged for)."""
    judged: bool = True


@dataclass(frozen=True)
class HengeState:
    cluster_state: ClusterState = ClusterState.NOT_CONVERGED
    last_action: LastAction | None = None
    history: tuple[Configuration, ...] = ()
    """Settled configurations since the history was last forgotten (reversion targets)."""
    record_due: bool = True
    """The configuration in force has not been recorded in the history yet."""
    blacklist: Mapping[str, datetime] = field(default_factory=dict)
    """Jobs skipped as reconfiguration candidates, with the time the entry expires."""
    give_back_blacklist: Mapping[str, datetime] = field(default_factory=dict)
    """Jobs whose give-back had to be undone, with expiry."""
    reduced: Mapping[str, float | None] = field(default_factory=dict)
    """Reduction marks: jobs cut by a reduce, with their input rate at the time."""
    reduced_jobs: frozenset[str] = frozenset()
    """The set of admitted jobs when the marks were set (a different set clears them)."""
    reduce_fraction_before: float | None = None
    """Utility fraction just before the latest reduce (did it help? for the lockout)."""
    actions_since_reduce: int | None = None
    """Actions taken after the latest reduce (0: it was the last one); ``None``: no reduce."""
    settle_count: int = 0
    """Consecutive settled rounds at maximum utility while ``not_converged``."""
    converged_fraction: float | None = None
    """Utility fraction captured once settled in ``converged`` (the drop reference)."""
    converged_jobs: frozenset[str] = frozenset()
    """Jobs counted when ``converged_fraction`` was captured."""
    models: Mapping[str, JobModel] = field(default_factory=dict)
    """Per-job performance models (``henge`` only)."""


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def _time(value: Any) -> datetime:
    return datetime.fromisoformat(str(value))


def dump(state: HengeState) -> JSONDict:
    last = state.last_action
    return {
        "cluster_state": state.cluster_state.value,
        "last_action": None
        if last is None
        else {
            "step": last.step.value,
            "at": _iso(last.at),
            "job_id": last.job_id,
            "utilities_before": dict(last.utilities_before),
            "executors_before": dict(last.executors_before),
            "executor_cores": last.executor_cores,
            "executor_memory_mb": last.executor_memory_mb,
            "judged": last.judged,
        },
        "history": [
            {
                "at": _iso(c.at),
                "allocations": dict(c.allocations),
                "total_utility": c.total_utility,
                "max_utility": c.max_utility,
            }
            for c in state.history
        ],
        "record_due": state.record_due,
        "blacklist": {k: _iso(v) for k, v in state.blacklist.items()},
        "give_back_blacklist": {k: _iso(v) for k, v in state.give_back_blacklist.items()},
        "reduced": dict(state.reduced),
        "reduced_jobs": sorted(state.reduced_jobs),
        "reduce_fraction_before": state.reduce_fraction_before,
        "actions_since_reduce": state.actions_since_reduce,
        "settle_count": state.settle_count,
        "converged_fraction": state.converged_fraction,
        "converged_jobs": sorted(state.converged_jobs),
        "models": {k: list(v) for k, v in state.models.items()},
    }


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def load(data: Mapping[str, Any]) -> HengeState:
    if not data:
        return HengeState()
    raw_last = data.get("last_action")
    last = None
    if raw_last is not None:
        last = LastAction(
            step=Step(raw_last["step"]),
            at=_time(raw_last["at"]),
            job_id=raw_last.get("job_id"),
            utilities_before={
                str(k): float(v) for k, v in (raw_last.get("utilities_before") or {}).items()
            },
            executors_before={
                str(k): int(v) for k, v in (raw_last.get("executors_before") or {}).items()
            },
            executor_cores=int(raw_last.get("executor_cores", 1)),
            executor_memory_mb=int(raw_last.get("executor_memory_mb", 0)),
            judged=bool(raw_last.get("judged", True)),
        )
    history = tuple(
        Configuration(
            at=_time(c["at"]),
            allocations={str(k): int(v) for k, v in c["allocations"].items()},
            total_utility=float(c["total_utility"]),
            max_utility=float(c["max_utility"]),
        )
        for c in data.get("history") or ()
    )
    since = data.get("actions_since_reduce")
    return HengeState(
        cluster_state=ClusterState(data.get("cluster_state", ClusterState.NOT_CONVERGED)),
        last_action=last,
        history=history,
        record_due=bool(data.get("record_due", True)),
        blacklist={str(k): _time(v) for k, v in (data.get("blacklist") or {}).items()},
        give_back_blacklist={
            str(k): _time(v) for k, v in (data.get("give_back_blacklist") or {}).items()
        },
        reduced={str(k): _opt_float(v) for k, v in (data.get("reduced") or {}).items()},
        reduced_jobs=frozenset(str(j) for j in data.get("reduced_jobs") or ()),
        reduce_fraction_before=_opt_float(data.get("reduce_fraction_before")),
        actions_since_reduce=None if since is None else int(since),
        settle_count=int(data.get("settle_count", 0)),
        converged_fraction=_opt_float(data.get("converged_fraction")),
        converged_jobs=frozenset(str(j) for j in data.get("converged_jobs") or ()),
        models=models_from_json(data.get("models")),
    )
