"""A cluster of fixed size from settings, with executors placed by the registry's targets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.cluster.port import Holding
from scheduler.core.model import ClusterView, NodeView


@dataclass(frozen=True)
class StaticCluster:
    nodes: int
    cores_per_node: int
    memory_mb_per_node: int
    name: str = "static"

    def view(self, holdings: Sequence[Holding]) -> ClusterView:
        cores = [0.0] * self.nodes
        memory = [0.0] * self.nodes
        # First fit, one executor at a time, as a scheduler placing pods would; what does not fit
        # anywhere is pending and holds nothing.
        for holding in sorted(holdings, key=lambda h: h.job_id):
            for _ in range(holding.executors):
                for i in range(self.nodes):
                    fits_cpu = cores[i] + holding.cores_per_executor <= self.cores_per_node
                    fits_mem = memory[i] + holding.memory_mb <= self.memory_mb_per_node
                    if fits_cpu and fits_mem:
                        cores[i] += holding.cores_per_executor
                        memory[i] += holding.memory_mb
                        break
        return ClusterView(
            tuple(
                NodeView(
                    name=f"node-{i}",
                    cores=float(self.cores_per_node),
                    memory_mb=float(self.memory_mb_per_node),
                    cores_requested=cores[i],
                    memory_requested_mb=memory[i],
                )
                for i in range(self.nodes)
            )
        )
