"""Cluster congestion (DESIGN §2 "Cluster congestion", thesis §2.6.2) and executor placement.

The paper calls a machine congested when its CPU load exceeds its cores. On Kubernetes executors
hold CPU requests and an executor that does not fit stays pending, so a node is congested when

- its measured CPU use is at or above its allocatable cores, or
- it has no room left for one more executor of the size in question (cores, and memory when
  the size names it).

The cluster is congested when a strict majority of its ready nodes are. A cluster without
ready nodes has no room at all and counts as congested.
"""

from __future__ import annotations

import dataclasses
import math

from scheduler.core.model import ClusterView, NodeView

_EPS = 1e-9
_SMALLEST_EXECUTOR = 1 - _EPS
"""Executors have whole cores: a node with less room than one core takes none."""
_UNLIMITED = 1 << 30
"""What fits of an executor that asks for nothing."""


def node_room(node: NodeView) -> tuple[float, float]:
    """Cores and memory (MiB) not yet requested on ``node``."""
    return (
        max(0.0, node.cores - node.cores_requested),
        max(0.0, node.memory_mb - node.memory_requested_mb),
    )


def node_fits(node: NodeView, executor_cores: float, executor_memory_mb: float = 0.0) -> int:
    """How many executors of the given size still fit on ``node`` (0 when it is not ready)."""
    if not node.ready:
        return 0
    return _fitting(*node_room(node), executor_cores, executor_memory_mb)


def room_for(cluster: ClusterView, executor_cores: float, executor_memory_mb: float = 0.0) -> int:
    """How many more executors of the given size can be placed, each whole on one ready node."""
    return sum(node_fits(n, executor_cores, executor_memory_mb) for n in cluster.nodes)


def node_congested(
    node: NodeView, executor_cores: float = 1.0, executor_memory_mb: float = 0.0
) -> bool:
    """CPU use at or above the allocatable cores, or no room for one more such executor."""
    if node.cpu_used is not None and node.cpu_used >= node.cores - _EPS:
        return True
    return node_fits(node, executor_cores, executor_memory_mb) < 1


def congested_nodes(
    cluster: ClusterView, executor_cores: float = 1.0, executor_memory_mb: float = 0.0
) -> tuple[int, int]:
    """(congested ready nodes, ready nodes)."""
    ready = [n for n in cluster.nodes if n.ready]
    congested = sum(1 for n in ready if node_congested(n, executor_cores, executor_memory_mb))
    return congested, len(ready)


def cluster_congested(
    cluster: ClusterView, executor_cores: float = 1.0, executor_memory_mb: float = 0.0
) -> bool:
    """True when a strict majority of the ready nodes are congested (or none is ready)."""
    congested, ready = congested_nodes(cluster, executor_cores, executor_memory_mb)
    if ready == 0:
        return True
    return 2 * congested > ready


def place_executors(
    cluster: ClusterView, count: int, executor_cores: float, executor_memory_mb: float = 0.0
) -> ClusterView | None:
    """The cluster with ``count`` more executors placed, or ``None`` if they do not fit.

    Each executor must fit whole on one ready node. Nodes with the most free cores are filled
    first (ties by name), so the result does not depend on the order of ``cluster.nodes``.
    """
    if count <= 0:
        return cluster
    order = sorted(
        (i for i, n in enumerate(cluster.nodes) if n.ready),
        key=lambda i: (-node_room(cluster.nodes[i])[0], cluster.nodes[i].name),
    )
    nodes = list(cluster.nodes)
    left = count
    for i in order:
        if left == 0:
            break
        take = min(left, node_fits(nodes[i], executor_cores, executor_memory_mb))
        if take <= 0:
            continue
        node = nodes[i]
        nodes[i] = dataclasses.replace(
            node,
            cores_requested=node.cores_requested + take * executor_cores,
            memory_requested_mb=node.memory_requested_mb + take * executor_memory_mb,
        )
        left -= take
    if left > 0:
        return None
    return ClusterView(tuple(nodes))


class Room:
    """Where more executors can go within one round's plan.

    Each ready node offers the cores and memory not yet requested on it, and a new executor
    must fit whole on one node (fullest node first, so larger executors later in the plan still
    find whole nodes). Executors a plan takes away free their cores too, but the snapshot does
    not say on which nodes: what they free is pooled, and taken after the nodes' room. (An
    executor placed into that pool may wait pending until the removed ones have left; the next
    round sees where it ended up.)
    """

    def __init__(self, cluster: ClusterView) -> None:
        # Fullest first, ordered once: a node only fills up within the round.
        rooms = sorted(node_room(n) for n in cluster.nodes if n.ready)
        self._nodes = [list(room) for room in rooms if room[0] >= _SMALLEST_EXECUTOR]
        self._first: dict[tuple[float, float], int] = {}
        """Per executor size, the first node that may still hold one: the nodes before it
        cannot, and a node's room only shrinks within the round."""
        self._released = [0.0, 0.0]

    @property
    def free_cores(self) -> float:
        return self.cores_on_nodes + self._released[0]

    @property
    def cores_on_nodes(self) -> float:
        """Free cores left on the nodes (not those that executors taken away free)."""
        return sum(cores for cores, _ in self._nodes if cores >= _SMALLEST_EXECUTOR)

    def release(self, executors: int, cores: float, memory_mb: float = 0.0) -> None:
        """``executors`` of this size leave the cluster."""
        if executors > 0:
            self._released[0] += executors * cores
            self._released[1] += executors * memory_mb

    def take(self, executors: int, cores: float, memory_mb: float = 0.0) -> int:
        """Place up to ``executors`` of this size; how many were placed."""
        if executors <= 0:
            return 0
        nodes, size = self._nodes, (cores, memory_mb)
        first = self._first.get(size, 0)
        while first < len(nodes) and not _holds_one(nodes[first], cores, memory_mb):
            first += 1
        self._first[size] = first
        placed = 0
        for index in range(first, len(nodes)):
            space = nodes[index]
            count = min(_fitting(space[0], space[1], cores, memory_mb), executors - placed)
            if count > 0:
                space[0] -= count * cores
                space[1] -= count * memory_mb
                placed += count
                if placed >= executors:
                    return placed  # (most takes end here: the pool is not asked)
        pooled = min(
            _fitting(self._released[0], self._released[1], cores, memory_mb), executors - placed
        )
        self._released[0] -= pooled * cores
        self._released[1] -= pooled * memory_mb
        return placed + pooled


def _holds_one(room: list[float], cores: float, memory_mb: float) -> bool:
    """``_fitting(room…, cores, memory_mb) >= 1``, without the counting (the scan for a size's
    first fitting node asks it of every full node)."""
    if cores > 0 and room[0] / cores + _EPS < 1:
        return False
    return memory_mb <= 0 or room[1] / memory_mb + _EPS >= 1


def _fitting(room_cores: float, room_memory: float, cores: float, memory_mb: float) -> int:
    """How many executors of (``cores``, ``memory_mb``) fit in the given room."""
    # (conditionals rather than min(): every executor a round places asks this)
    count = math.floor(room_cores / cores + _EPS) if cores > 0 else _UNLIMITED
    if memory_mb > 0:
        by_memory = math.floor(room_memory / memory_mb + _EPS)
        count = by_memory if by_memory < count else count
    return count if count < _UNLIMITED else _UNLIMITED
