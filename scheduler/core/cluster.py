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
    cores, memory = node_room(node)
    count = math.inf if executor_cores <= 0 else math.floor(cores / executor_cores + _EPS)
    if executor_memory_mb > 0:
        count = min(count, math.floor(memory / executor_memory_mb + _EPS))
    if math.isinf(count):
        return 1 << 30
    return int(count)


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
