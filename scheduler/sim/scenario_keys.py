"""Reading a scenario document key by key, with errors that name the key path."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_REQUIRED: Any = object()
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ScenarioError(ValueError):
    """A scenario that cannot be used; ``key`` is the offending key path."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def check_name(value: str, key: str) -> str:
    if not _NAME.match(value) or len(value) > 100:
        raise ScenarioError(key, f"{value!r} is not a valid name (letters, digits, '.', '_', '-')")
    return value


def sequence(value: Any, key: str, *, non_empty: bool = False) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise ScenarioError(key, "must be a list")
    if non_empty and not value:
        raise ScenarioError(key, "must not be empty")
    return value


def as_number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(key, f"must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ScenarioError(key, "must be a finite number")
    return float(value)


def names(value: Any, key: str, known: Iterable[str], what: str) -> tuple[str, ...]:
    """A list of names, each one of ``known``."""
    allowed = set(known)
    result: list[str] = []
    for i, item in enumerate(sequence(value, key)):
        if not isinstance(item, str):
            raise ScenarioError(f"{key}[{i}]", f"must be a {what} name")
        if item not in allowed:
            raise ScenarioError(f"{key}[{i}]", f"unknown {what} {item!r}")
        result.append(item)
    return tuple(result)


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` on top of ``base``; nested mappings are merged, everything else replaced."""
    merged = dict(base)
    for key, value in override.items():
        old = merged.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            merged[key] = deep_merge(old, value)
        else:
            merged[key] = value
    return merged


class Fields:
    """The keys of one mapping in the document, at ``path``; unknown keys are refused."""

    def __init__(self, data: Any, path: str, allowed: Iterable[str]) -> None:
        if not isinstance(data, Mapping):
            raise ScenarioError(path or "scenario", "must be a mapping")
        allowed_set = set(allowed)
        for key in data:
            if key not in allowed_set:
                hint = ", ".join(sorted(allowed_set))
                raise ScenarioError(join(path, str(key)), f"unknown key (allowed: {hint})")
        self.data: Mapping[str, Any] = data
        self.path = path

    def key(self, name: str) -> str:
        return join(self.path, name)

    def has(self, name: str) -> bool:
        return self.data.get(name) is not None

    def raw(self, name: str, default: Any = _REQUIRED) -> Any:
        value = self.data.get(name)
        if value is None:
            if default is _REQUIRED:
                raise ScenarioError(self.key(name), "missing")
            return default
        return value

    def child(self, name: str) -> Any:
        return self.raw(name)

    def number(
        self,
        name: str,
        default: Any = _REQUIRED,
        *,
        positive: bool = False,
        minimum: float | None = None,
        maximum: float | None = None,
        integer: bool = False,
    ) -> float:
        raw = self.raw(name, default)
        key = self.key(name)
        value = as_number(raw, key)
        if integer and not float(value).is_integer():
            raise ScenarioError(key, f"must be a whole number, got {raw!r}")
        if positive and value <= 0:
            raise ScenarioError(key, "must be > 0")
        if minimum is not None and value < minimum:
            raise ScenarioError(key, f"must be >= {minimum:g}")
        if maximum is not None and value > maximum:
            raise ScenarioError(key, f"must be <= {maximum:g}")
        return value

    def integer(self, name: str, default: Any = _REQUIRED, *, minimum: int = 0) -> int:
        return int(self.number(name, default, minimum=minimum, integer=True))

    def string(self, name: str, default: Any = _REQUIRED) -> str:
        value = self.raw(name, default)
        if not isinstance(value, str):
            raise ScenarioError(self.key(name), f"must be a string, got {value!r}")
        return value

    def choice(self, name: str, options: Sequence[str], default: Any = _REQUIRED) -> str:
        value = self.string(name, default)
        if value not in options:
            raise ScenarioError(self.key(name), f"must be one of {', '.join(options)}")
        return value
