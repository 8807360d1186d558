"""Juice: the fraction of a job's input that it processed in a window (DESIGN §2, thesis §2.7).

Two forms:

- the general operator-graph form, eq. 2.5/2.6 (:func:`topology_juice`), for engines that report
  per-operator counts and for the simulator's operator graphs, with the acked variant of eq. 2.7;
- the Spark micro-batch form (:func:`microbatch_juice`): rows are lost to the job only at its
  sources, so juice is rows completed over rows arrived, per source, averaged over sources.

Raw values may exceed 1 (counts taken in loosely synchronised windows, a job draining its
backlog); :func:`clamp_juice` brings them into [0, 1] for utility.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

NO_INPUT_JUICE = 1.0
"""Juice when nothing arrived: nothing was lost."""


@dataclass(frozen=True)
class Edge:
    """One edge of an operator graph over a window: the tuples ``parent`` sent on this edge and
    the tuples ``child`` executed of them."""

    parent: str
    child: str
    sent: float
    executed: float


def clamp_juice(value: float) -> float:
    return min(1.0, max(0.0, value))


# --------------------------------------------------------------------------------------------
# General form: eq. 2.5 / 2.6 / 2.7
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Graph:
    order: tuple[str, ...]
    """Operators in topological order."""
    sources: tuple[str, ...]
    sinks: tuple[str, ...]
    incoming: Mapping[str, tuple[tuple[str, float], ...]]
    """child -> (parent, E/T) for every incoming edge."""


def _check_count(edge: Edge, name: str, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise ValueError(
            f"edge {edge.parent!r} -> {edge.child!r}: {name} must be a finite number >= 0, "
            f"got {value!r}"
        )


def _build_graph(edges: Iterable[Edge]) -> _Graph:
    edge_list = list(edges)
    nodes: dict[str, None] = {}  # insertion-ordered set
    sent_total: dict[str, float] = {}
    out_degree: dict[str, int] = {}
    in_degree: dict[str, int] = {}
    children: dict[str, list[str]] = {}
    for e in edge_list:
        _check_count(e, "sent", e.sent)
        _check_count(e, "executed", e.executed)
        if e.parent == e.child:
            raise ValueError(f"the operator graph has a cycle: {e.parent!r} -> {e.child!r}")
        nodes.setdefault(e.parent)
        nodes.setdefault(e.child)
        sent_total[e.parent] = sent_total.get(e.parent, 0.0) + e.sent
        out_degree[e.parent] = out_degree.get(e.parent, 0) + 1
        in_degree[e.child] = in_degree.get(e.child, 0) + 1
        children.setdefault(e.parent, []).append(e.child)

    incoming: dict[str, list[tuple[str, float]]] = {n: [] for n in nodes}
    for e in edge_list:
        total = sent_total[e.parent]
        # A parent that sent nothing lost nothing: its juice passes on, split evenly.
        share = e.executed / total if total > 0 else 1.0 / out_degree[e.parent]
        incoming[e.child].append((e.parent, share))

    sources = tuple(n for n in nodes if in_degree.get(n, 0) == 0)
    sinks = tuple(n for n in nodes if out_degree.get(n, 0) == 0)

    # Kahn's algorithm; whatever is left over lies on or behind a cycle.
    remaining = {n: in_degree.get(n, 0) for n in nodes}
    ready = list(sources)
    order: list[str] = []
    while ready:
        node = ready.pop()
        order.append(node)
        for child in children.get(node, []):
            remaining[child] -= 1
            if remaining[child] == 0:
                ready.append(child)
    if len(order) != len(nodes):
        stuck = sorted(n for n, left in remaining.items() if left > 0)
        raise ValueError(
            "the operator graph has a cycle; juice needs a DAG (operators on or after the "
            f"cycle: {', '.join(map(repr, stuck))})"
        )
    return _Graph(
        order=tuple(order),
        sources=sources,
        sinks=sinks,
        incoming={k: tuple(v) for k, v in incoming.items()},
    )


def _propagate(graph: _Graph, seeds: Mapping[str, float]) -> dict[str, float]:
    """Eq. 2.5: J(o) = Σ_parents J(i) · E/T, with the given juice at the sources."""
    juice: dict[str, float] = {}
    for node in graph.order:
        if node in graph.sources:
            juice[node] = seeds.get(node, 0.0)
        else:
            juice[node] = math.fsum(juice[p] * share for p, share in graph.incoming[node])
    return juice


def operator_juice(edges: Iterable[Edge]) -> dict[str, float]:
    """Every operator's juice (eq. 2.5); sources have juice 1. Raises ``ValueError`` on a cycle
    or a negative / non-finite count."""
    graph = _build_graph(edges)
    return _propagate(graph, dict.fromkeys(graph.sources, 1.0))


def source_contributions(edges: Iterable[Edge]) -> dict[str, float]:
    """Per source ``s``: Σ_sinks J^s(sink), the share of ``s``'s input that reached the sinks.

    Eq. 2.6 is linear, so the topology juice is the mean of these values.
    """
    graph = _build_graph(edges)
    result: dict[str, float] = {}
    for source in graph.sources:
        juice = _propagate(graph, {source: 1.0})
        result[source] = math.fsum(juice[s] for s in graph.sinks)
    return result


def topology_juice(edges: Iterable[Edge]) -> float:
    """Topology juice (eq. 2.6): Σ_sinks J(sink) / number of sources.

    ``T`` for an edge is everything its parent sent on all its outgoing edges (a fork splits the
    parent's juice) and ``E`` what the child executed from that parent. No edges, or a parent
    that sent nothing, count as no input: nothing was lost. The value is raw: it may exceed 1 if
    a child executed more than was sent in the window (loosely synchronised counts).
    """
    graph = _build_graph(edges)
    if not graph.sources:
        return NO_INPUT_JUICE
    juice = _propagate(graph, dict.fromkeys(graph.sources, 1.0))
    return math.fsum(juice[s] for s in graph.sinks) / len(graph.sources)


def acked_topology_juice(edges: Iterable[Edge], acked: float) -> float:
    """Eq. 2.7: topology juice × tuples acked / tuples sent by all sources (at-least-once)."""
    if not math.isfinite(acked) or acked < 0:
        raise ValueError(f"acked must be a finite number >= 0, got {acked!r}")
    edge_list = list(edges)
    juice = topology_juice(edge_list)
    children = {e.child for e in edge_list}
    source_sent = math.fsum(e.sent for e in edge_list if e.parent not in children)
    if source_sent <= 0:
        return juice
    return juice * acked / source_sent


# --------------------------------------------------------------------------------------------
# Spark micro-batch form
# --------------------------------------------------------------------------------------------


class SourceCounts(Protocol):
    """What the micro-batch form reads from a source report (see ``report.SourceReport``)."""

    @property
    def name(self) -> str: ...
    @property
    def arrived_rows(self) -> float | None: ...
    @property
    def processed_rows(self) -> float: ...
    @property
    def backlog_rows(self) -> float | None: ...


@dataclass(frozen=True)
class SourceFlow:
    """Rows that arrived at one source and rows of it completed, over some window."""

    name: str
    arrived: float
    completed: float

    @property
    def juice(self) -> float:
        """completed / arrived (raw); no arrivals means nothing was lost."""
        if self.arrived <= 0:
            return NO_INPUT_JUICE
        return self.completed / self.arrived


def arrived_rows(source: SourceCounts, backlog_before: float | None) -> float | None:
    """Rows that arrived at ``source`` in its sub-window, or ``None`` when unknowable.

    The source's own count (from its latest offset) when reported; else
    ``processed + Δbacklog`` when it reports a backlog and the backlog at the start of the
    sub-window (``backlog_before``, the previous report's value) is known.
    """
    if source.arrived_rows is not None:
        return source.arrived_rows
    if source.backlog_rows is None or backlog_before is None:
        return None
    # Never negative (e.g. retention dropped rows from the backlog unread).
    return max(0.0, source.processed_rows + source.backlog_rows - backlog_before)


def source_flows(
    sources: Iterable[SourceCounts], backlog_before: Mapping[str, float] | None = None
) -> dict[str, SourceFlow]:
    """Sum arrived and completed rows per source name.

    ``sources`` are the source entries of consecutive sub-windows, oldest first; entries with the
    same name are the same source at successive times, so each one's Δbacklog is taken against
    the previous entry of that name (for the first, against ``backlog_before[name]``). An entry
    whose arrivals cannot be known is left out entirely (its completions too), so the ratio stays
    one of like for like.
    """
    last_backlog: dict[str, float] = dict(backlog_before or {})
    arrived: dict[str, float] = {}
    completed: dict[str, float] = {}
    for source in sources:
        rows = arrived_rows(source, last_backlog.get(source.name))
        if source.backlog_rows is not None:
            last_backlog[source.name] = source.backlog_rows
        if rows is None:
            continue
        arrived[source.name] = arrived.get(source.name, 0.0) + rows
        completed[source.name] = completed.get(source.name, 0.0) + source.processed_rows
    return {name: SourceFlow(name, arrived[name], completed[name]) for name in arrived}


def flows_juice(flows: Iterable[SourceFlow]) -> tuple[float, float] | None:
    """(raw, clamped) juice averaged over sources, or ``None`` when there is no source."""
    values = [f.juice for f in flows]
    if not values:
        return None
    raw = math.fsum(values) / len(values)
    return raw, clamp_juice(raw)


def microbatch_juice(
    sources: Iterable[SourceCounts], backlog_before: Mapping[str, float] | None = None
) -> tuple[float, float] | None:
    """Spark micro-batch juice over the given source entries: (raw, clamped).

    Per source, rows completed / rows arrived, each summed over the window (see
    :func:`source_flows`), then averaged over sources. Raw may exceed 1 (a job draining its
    backlog); the clamped value is in [0, 1]. A source with no arrivals has juice 1. ``None``
    when no source's arrivals are known.
    """
    return flows_juice(source_flows(sources, backlog_before).values())
