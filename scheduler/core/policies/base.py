"""What every baseline policy of DESIGN §4 is besides its own rule.

A baseline names itself, its settings dataclass and its state dataclass; construction from
parameters, the initial state and the state's JSON form (:mod:`timers`) follow from those.
A subclass writes only ``decide``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from scheduler.core.policies.timers import dump_timers, load_timers
from scheduler.core.policy import JSONDict, PolicySettingsError, build_settings

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

SettingsT = TypeVar("SettingsT")
StateT = TypeVar("StateT", bound="DataclassInstance")


def require(condition: bool, message: str) -> None:
    """Reject a settings value with :class:`PolicySettingsError`."""
    if not condition:
        raise PolicySettingsError(message)


class BaselinePolicy(Generic[SettingsT, StateT]):
    """A per-job baseline with settings ``SettingsT`` and timer state ``StateT``."""

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
