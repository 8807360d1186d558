"""The cluster as Kubernetes sees it (DESIGN §6 "Cluster view", ``kubernetes``).

- nodes: each node's allocatable CPU and memory; a node that is not Ready, or is cordoned
  (``spec.unschedulable``), is not counted;
- held: the resource requests of the executor pods (label ``spark-role=executor``, which Spark
  on Kubernetes sets) in the managed namespaces, on the node each is bound to; pods that are
  not bound yet (Pending) or have finished hold nothing;
- use: the node's CPU use from ``metrics.k8s.io`` when the metrics server is installed.

Executors are real pods, so the registry's ``holdings`` are not needed. A failed API call
reuses the last view (with a warning) once one exists.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import structlog

from scheduler.cluster.port import Holding
from scheduler.core.model import ClusterView, NodeView
from scheduler.kube.client import KubeApi, KubeError, parse_quantity
from scheduler.kube.settings import KubeSettings

log = structlog.get_logger("henge.cluster.kubernetes")

MIB = Decimal(1024 * 1024)
FINISHED = ("Succeeded", "Failed")


def _quantity(value: Any) -> Decimal:
    if value in (None, ""):
        return Decimal(0)
    try:
        return parse_quantity(value)
    except ValueError:
        log.warning("cluster.bad_quantity", value=value)
        return Decimal(0)


def node_ready(node: dict[str, Any]) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_requests(pod: dict[str, Any]) -> tuple[Decimal, Decimal]:
    """(cores, bytes) a pod requests, as the Kubernetes scheduler counts them: the sum over its
    containers, at least the largest init container, plus the pod overhead."""
    spec = pod.get("spec") or {}

    def requests(container: dict[str, Any]) -> tuple[Decimal, Decimal]:
        wanted = (container.get("resources") or {}).get("requests") or {}
        return _quantity(wanted.get("cpu")), _quantity(wanted.get("memory"))

    app = [requests(c) for c in spec.get("containers") or ()]
    init = [requests(c) for c in spec.get("initContainers") or ()]
    cpu = max(sum((c for c, _ in app), Decimal(0)), max((c for c, _ in init), default=Decimal(0)))
    memory = max(
        sum((m for _, m in app), Decimal(0)), max((m for _, m in init), default=Decimal(0))
    )
    overhead = spec.get("overhead") or {}
    return cpu + _quantity(overhead.get("cpu")), memory + _quantity(overhead.get("memory"))


def build_view(
    nodes: Iterable[dict[str, Any]],
    executor_pods: Iterable[dict[str, Any]],
    node_metrics: Iterable[dict[str, Any]] | None,
) -> ClusterView:
    """A :class:`ClusterView` from Node, Pod and NodeMetrics objects as the API returns them."""
    held_cpu: dict[str, Decimal] = {}
    held_memory: dict[str, Decimal] = {}
    for pod in executor_pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if not node_name or phase in FINISHED:
            continue
        cpu, memory = pod_requests(pod)
        held_cpu[node_name] = held_cpu.get(node_name, Decimal(0)) + cpu
        held_memory[node_name] = held_memory.get(node_name, Decimal(0)) + memory
    used = {
        m["metadata"]["name"]: _quantity((m.get("usage") or {}).get("cpu"))
        for m in node_metrics or ()
    }
    views = []
    for node in nodes:
        name = node["metadata"]["name"]
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        views.append(
            NodeView(
                name=name,
                cores=float(_quantity(allocatable.get("cpu"))),
                memory_mb=float(_quantity(allocatable.get("memory")) / MIB),
                cores_requested=float(held_cpu.get(name, Decimal(0))),
                memory_requested_mb=float(held_memory.get(name, Decimal(0)) / MIB),
                cpu_used=float(used[name]) if name in used else None,
                ready=node_ready(node),
            )
        )
    return ClusterView(tuple(sorted(views, key=lambda n: n.name)))


@dataclass
class KubernetesCluster:
    api: KubeApi
    settings: KubeSettings
    name: str = "kubernetes"
    _last: ClusterView | None = field(default=None, repr=False)
    _metrics_missing_logged: bool = field(default=False, repr=False)

    def executor_pods(self) -> list[dict[str, Any]]:
        pods: list[dict[str, Any]] = []
        for namespace in self.settings.scopes():
            pods.extend(self.api.pods(namespace, self.settings.executor_selector))
        return pods

    def view(self, holdings: Sequence[Holding]) -> ClusterView:
        try:
            metrics = self.api.node_metrics()
            if metrics is None and not self._metrics_missing_logged:
                log.info("cluster.no_metrics_api", detail="metrics.k8s.io not served; no CPU use")
                self._metrics_missing_logged = True
            self._last = build_view(self.api.nodes(), self.executor_pods(), metrics)
        except KubeError as exc:
            if self._last is None:
                raise
            log.warning("cluster.stale_view", source=self.name, error=str(exc))
        return self._last
