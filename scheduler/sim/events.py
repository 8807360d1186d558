"""Timed events of a scenario, turned into what the world applies and when.

Input spikes are folded into the jobs' input schedules (exact times). CPU interference and node
loss change the cluster; the world applies them at the first sub-window boundary at or after
their time. A collector outage silences the reports of every window that overlaps it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scheduler.sim.scenario import (
    ClusterSpec,
    CollectorOutage,
    Event,
    Interference,
    NodeLoss,
    Spike,
)


@dataclass(frozen=True)
class ClusterChange:
    """Something the cluster must do at ``at_s``: fail or restore nodes, or set slowdowns."""

    at_s: float
    fail: tuple[str, ...] = ()
    restore: tuple[str, ...] = ()
    slowdown: tuple[tuple[str, float], ...] = ()


def spikes(events: Iterable[Event]) -> list[Spike]:
    return [e for e in events if isinstance(e, Spike)]


def outages(events: Iterable[Event]) -> list[CollectorOutage]:
    return [e for e in events if isinstance(e, CollectorOutage)]


def silent(outage_list: Sequence[CollectorOutage], job: str, w0: float, w1: float) -> bool:
    """True when the window ``[w0, w1)`` of ``job`` overlaps a collector outage."""
    return any(
        w0 < o.at_s + o.duration_s and w1 > o.at_s and (not o.jobs or job in o.jobs)
        for o in outage_list
    )


def cluster_changes(events: Iterable[Event], cluster: ClusterSpec) -> list[ClusterChange]:
    """The node failures, recoveries and slowdown settings, in time order."""
    changes: list[ClusterChange] = []
    losses = [e for e in events if isinstance(e, NodeLoss)]
    for loss in losses:
        changes.append(ClusterChange(loss.at_s, fail=loss.nodes))
        if loss.duration_s is not None:
            changes.append(ClusterChange(loss.at_s + loss.duration_s, restore=loss.nodes))
    interference = [e for e in events if isinstance(e, Interference)]
    names = [n.name for n in cluster.nodes]
    for t in sorted({b for e in interference for b in (e.at_s, e.at_s + e.duration_s)}):
        changes.append(ClusterChange(t, slowdown=_slowdowns(interference, names, t)))
    return sorted(changes, key=lambda c: c.at_s)


def _slowdowns(
    interference: Sequence[Interference], names: Sequence[str], t: float
) -> tuple[tuple[str, float], ...]:
    """Every node's slowdown at ``t``: the product of the interference active on it."""
    active = [e for e in interference if e.at_s <= t < e.at_s + e.duration_s]
    return tuple(
        (name, math.prod(e.factor for e in active if not e.nodes or name in e.nodes))
        for name in names
    )


def ready_cores_at(cluster: ClusterSpec, events: Iterable[Event], t: float) -> float:
    """Cores of the nodes that are up at ``t``."""
    down: set[str] = set()
    for loss in (e for e in events if isinstance(e, NodeLoss)):
        if loss.at_s <= t and (loss.duration_s is None or t < loss.at_s + loss.duration_s):
            down.update(loss.nodes)
    return sum(n.cores for n in cluster.nodes if n.name not in down)
