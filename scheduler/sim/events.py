"""Timed events of a scenario, turned into what the world applies and when.

Input spikes are folded into the jobs' input schedules (exact times). CPU interference, node
loss, slow executors and skew change the cluster or a job; the world applies them at the first
sub-window boundary at or after their time. A collector outage silences the reports of every
window that overlaps it.
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
    Scenario,
    SkewChange,
    SlowExecutor,
    Spike,
)
from scheduler.sim.types import EventMark


@dataclass(frozen=True)
class ClusterChange:
    """Something the cluster must do at ``at_s``: fail or restore nodes, or set slowdowns."""

    at_s: float
    fail: tuple[str, ...] = ()
    restore: tuple[str, ...] = ()
    slowdown: tuple[tuple[str, float], ...] = ()
    """(node, factor) for every node."""
    slow_executor: tuple[tuple[str, float], ...] = ()
    """(job, factor): the job's oldest running executor turns ``factor`` times slower; a factor
    of 1 makes every executor of the job healthy again."""
    skew: tuple[tuple[str, str, float], ...] = ()
    """(job, stage, factor): the stage's skew from now on (1: none)."""


def effective_at(at_s: float, sub_window_s: float) -> float:
    """The sub-window boundary at or after ``at_s``, when a cluster event or an arrival takes
    effect."""
    return math.ceil(at_s / sub_window_s - 1e-9) * sub_window_s


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
    for slow in (e for e in events if isinstance(e, SlowExecutor)):
        changes.append(ClusterChange(slow.at_s, slow_executor=((slow.job, slow.factor),)))
        changes.append(ClusterChange(slow.at_s + slow.duration_s, slow_executor=((slow.job, 1.0),)))
    for skew in (e for e in events if isinstance(e, SkewChange)):
        changes.append(ClusterChange(skew.at_s, skew=((skew.job, skew.stage, skew.factor),)))
        if skew.duration_s is not None:
            end = skew.at_s + skew.duration_s
            changes.append(ClusterChange(end, skew=((skew.job, skew.stage, 1.0),)))
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


def event_marks(scenario: Scenario) -> tuple[EventMark, ...]:
    """The moments the scenario changes the world while the scheduler acts, counted from its
    start (``scheduler_start_s``), at the time each takes effect: spikes and collector outages
    at their exact times, node loss, interference and arrivals at the next sub-window boundary.
    Jobs present from time zero do not arrive; moments before the scheduler starts or after
    the end are left out."""
    sub = scenario.sub_window_s
    raw: list[tuple[str, float, tuple[str, ...]]] = []
    for event in scenario.events:
        end = None if event.duration_s is None else event.at_s + event.duration_s
        if isinstance(event, Spike | CollectorOutage):
            start_at, end_at, subject = event.at_s, end, event.jobs
        elif isinstance(event, SlowExecutor | SkewChange):
            start_at = effective_at(event.at_s, sub)
            end_at = None if end is None else effective_at(end, sub)
            subject = (event.job,)
        else:
            start_at = effective_at(event.at_s, sub)
            end_at = None if end is None else effective_at(end, sub)
            subject = event.nodes
        kind = _KIND[type(event)]
        raw.append((f"{kind}_start", start_at, subject))
        if end_at is not None:
            raw.append((f"{kind}_end", end_at, subject))
    raw.extend(
        ("arrival", effective_at(job.arrives_at_s, sub), (job.name,))
        for job in scenario.jobs
        if job.arrives_at_s > 0
    )
    begin, finish = scenario.scheduler_start_s, scenario.duration_s
    merged: dict[tuple[float, str], tuple[str, ...]] = {}
    for kind, at, subject in sorted(raw, key=lambda r: r[1]):
        if not begin <= at < finish:
            continue
        # One mark for what happens together (a wave of arrivals); an empty subject is "all".
        earlier = merged.get((at, kind))
        merged[at, kind] = subject if earlier is None else _union(earlier, subject)
    return tuple(EventMark(kind, at - begin, subject) for (at, kind), subject in merged.items())


_KIND: dict[type, str] = {
    Spike: "spike",
    Interference: "interference",
    NodeLoss: "node_loss",
    CollectorOutage: "collector_outage",
    SlowExecutor: "slow_executor",
    SkewChange: "skew",
}


def _union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return () if not a or not b else (*a, *(x for x in b if x not in a))
