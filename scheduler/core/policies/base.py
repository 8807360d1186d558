"""What every baseline policy of DESIGN §4 is besides its own rule.

A baseline names itself, its settings dataclass and its state dataclass; construction from
parameters, the initial state and the state's JSON form (:mod:`timers`) follow from those.

Every baseline but ``static`` also shares the round itself (:class:`PerJobBaseline`): it
looks at the admitted jobs one at a time in a fixed order, hands out the free cores first
come, first served (:mod:`rounds`), carries each job's timer from one round to the next, keeps
the timers of jobs frozen for the round, and, when no job needs anything, says so in a reason
of its own. Such a policy writes only its rule for one job, :meth:`PerJobBaseline.decide_job`,
and how its state holds the per-job timers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from scheduler.core.model import JobView, Plan, Snapshot
from scheduler.core.policies.rounds import FreeCores, RoundLog, jobs_in_order
from scheduler.core.policies.timers import dump_timers, epoch_s, keep_frozen, load_timers
from scheduler.core.policy import JSONDict, PolicySettingsError, build_settings

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

SettingsT = TypeVar("SettingsT")
StateT = TypeVar("StateT", bound="DataclassInstance")
TimerT = TypeVar("TimerT")


def require(condition: bool, message: str) -> None:
    """Reject a settings value with :class:`PolicySettingsError`."""
    if not condition:
        raise PolicySettingsError(message)


class BaselinePolicy(Generic[SettingsT, StateT]):
    """A baseline with settings ``SettingsT`` and timer state ``StateT``."""

    name: str
    settings_type: type[SettingsT]
    state_type: type[StateT]

    def __init__(self, settings: SettingsT | None = None) -> None:
        self.settings: SettingsT = self.settings_type() if settings is None else settings

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Self:
        """The policy with ``params`` overriding its settings' defaults."""
        return cls(build_settings(cls.settings_type, params))

    def initial_state(self) -> StateT:
        return self.state_type()

    def dump_state(self, state: StateT) -> JSONDict:
        return dump_timers(state)

    def load_state(self, data: JSONDict) -> StateT:
        return load_timers(self.state_type, data)


@dataclass(frozen=True)
class Turn:
    """One round as a per-job rule sees it; the jobs of the round share it in their order."""

    now_s: float
    """The round's time (epoch seconds)."""
    free: FreeCores
    """The free cores the jobs before this one have left."""
    log: RoundLog
    """The round's changes and remarks so far."""
    previous_round: float | None = None
    """When the previous round ran (epoch seconds), for a policy whose state remembers it."""

    @property
    def evidence_from(self) -> float:
        """Since when this round's window metrics show what they show: they cover the time since
        the previous round, so a condition first seen now may date from then. Without a
        previous round, from now."""
        return self.previous_round if self.previous_round is not None else self.now_s


class PerJobBaseline(BaselinePolicy[SettingsT, StateT], ABC, Generic[SettingsT, StateT, TimerT]):
    """A baseline that decides on each job alone, with one timer ``TimerT`` per job."""

    quiet_reason: str
    """The plan's reason when no job has anything to say."""

    @abstractmethod
    def decide_job(self, job: JobView, previous: TimerT | None, turn: Turn) -> TimerT | None:
        """Apply the rule to ``job``, whose timer from the previous round is ``previous``
        (``None`` for a job the policy has no timer for): record any change or remark in
        ``turn.log``, take the cores a growth uses from ``turn.free``, and return the job's
        timer for the next round (``None`` for none)."""

    @abstractmethod
    def timers(self, state: StateT) -> Mapping[str, TimerT]:
        """The per-job timers ``state`` holds, by job id."""

    @abstractmethod
    def next_state(self, timers: dict[str, TimerT], turn: Turn) -> StateT:
        """The state holding ``timers`` after the round ``turn``."""

    def previous_round(self, state: StateT) -> float | None:
        """When the round that left ``state`` ran, for a policy whose state remembers it."""
        return None

    def decide(self, snapshot: Snapshot, state: StateT, now: datetime) -> tuple[Plan, StateT]:
        previous = self.timers(state)
        turn = Turn(
            epoch_s(now),
            FreeCores(snapshot.cluster.free_cores),
            RoundLog(),
            self.previous_round(state),
        )
        timers: dict[str, TimerT] = {}
        for job in jobs_in_order(snapshot):
            timer = self.decide_job(job, previous.get(job.job_id), turn)
            if timer is not None:
                timers[job.job_id] = timer
        timers = keep_frozen(snapshot, previous, timers)
        return turn.log.plan(snapshot, self.quiet_reason), self.next_state(timers, turn)
