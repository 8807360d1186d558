"""Realizers by name."""

from __future__ import annotations

from collections.abc import Callable

from scheduler.realize.agent import AgentRealizer
from scheduler.realize.dry_run import DryRunRealizer
from scheduler.realize.port import Realizer


def _spark_operator() -> Realizer:
    from scheduler.realize.spark_operator import SparkOperatorRealizer

    return SparkOperatorRealizer.from_env()


REALIZERS: dict[str, Callable[[], Realizer]] = {
    "agent": AgentRealizer,
    "dry-run": DryRunRealizer,
    "spark-operator": _spark_operator,
}


def make_realizer(name: str) -> Realizer:
    try:
        return REALIZERS[name]()
    except KeyError:
        raise ValueError(f"unknown realizer {name!r}; known: {', '.join(REALIZERS)}") from None
