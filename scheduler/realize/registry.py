"""Realizers by name."""

from __future__ import annotations

from collections.abc import Callable

from scheduler.realize.agent import AgentRealizer
from scheduler.realize.dry_run import DryRunRealizer
from scheduler.realize.port import Realizer

REALIZERS: dict[str, Callable[[], Realizer]] = {
    "agent": AgentRealizer,
    "dry-run": DryRunRealizer,
}


def make_realizer(name: str) -> Realizer:
    try:
        return REALIZERS[name]()
    except KeyError:
        raise ValueError(f"unknown realizer {name!r}; known: {', '.join(REALIZERS)}") from None
