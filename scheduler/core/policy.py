"""The policy plug-in point: a small protocol every policy provides.

A policy turns a :class:`~scheduler.core.model.Snapshot` and its own state into a
:class:`~scheduler.core.model.Plan` and its next state. Its state must round-trip through JSON
(``dump_state`` / ``load_state``) because the loop stores it after every round and a restart
resumes from it. Settings are a frozen dataclass per policy with the paper's defaults.
The built-in policies are looked up by name in :mod:`scheduler.core.policies.registry`.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from scheduler.core.model import Plan, Snapshot

JSONDict = dict[str, Any]
StateT = TypeVar("StateT")


class Policy(Protocol[StateT]):
    """What every scheduling policy provides."""

    @property
    def name(self) -> str:
        """The name the policy is registered and recorded under."""
        ...

    def initial_state(self) -> StateT: ...

    def decide(self, snapshot: Snapshot, state: StateT, now: datetime) -> tuple[Plan, StateT]:
        """Pure: the same snapshot, state and time always give the same plan."""
        ...

    def dump_state(self, state: StateT) -> JSONDict: ...

    def load_state(self, data: JSONDict) -> StateT: ...


class UnknownPolicyError(KeyError):
    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(name)
        self.name = name
        self.known = tuple(known)

    def __str__(self) -> str:
        return f"unknown policy {self.name!r}; known: {', '.join(self.known)}"


class PolicySettingsError(ValueError):
    pass


SettingsT = TypeVar("SettingsT")


def build_settings(cls: type[SettingsT], params: Mapping[str, Any]) -> SettingsT:
    """A settings dataclass from overrides, rejecting unknown names and values of the wrong
    type with a clear message."""
    assert dataclasses.is_dataclass(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - known)
    if unknown:
        raise PolicySettingsError(
            f"unknown setting(s) {', '.join(unknown)} for {cls.__name__}; "
            f"known: {', '.join(sorted(known))}"
        )
    hints = _hints(cls) if params else {}
    for name, value in params.items():
        # Settings come as JSON (an environment variable, a command-line option): "false"
        # would pass for a true switch, and a string where a number goes would fail only
        # inside a check, as a traceback.
        if not _fits(value, hints[name]):
            raise PolicySettingsError(
                f"setting {name} of {cls.__name__} must be {_kind(hints[name])}, not {value!r}"
            )
    return cls(**params)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    # (resolving the annotations takes about 0.2 ms, and the policy is built every round)
    return typing.get_type_hints(cls)


_KINDS: dict[Any, str] = {
    bool: "true or false",
    int: "a whole number",
    float: "a number",
    str: "text",
}


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON ``value`` fits the annotation ``hint`` (a whole number fits a float;
    a bool fits neither numbers nor text; annotations other than these are not checked)."""
    if _is_union(hint):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return True


def _kind(hint: Any) -> str:
    if _is_union(hint):
        return " or ".join("null" if a is type(None) else _kind(a) for a in typing.get_args(hint))
    return _KINDS.get(hint, str(hint))


def _is_union(hint: Any) -> bool:
    return isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
