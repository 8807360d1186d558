"""Realizers by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from scheduler.realize.agent import AgentRealizer
from scheduler.realize.dry_run import DryRunRealizer
from scheduler.realize.port import Realizer

if TYPE_CHECKING:
    from scheduler.kube.client import KubeApi
    from scheduler.kube.settings import KubeSettings


def _spark_operator(kube: KubeSettings, api: KubeApi | None) -> Realizer:
    from scheduler.kube.client import KubeApi
    from scheduler.realize.spark_operator import SparkOperatorRealizer

    return SparkOperatorRealizer(api or KubeApi.from_config(kube.kubeconfig, kube.context), kube)


REALIZERS: dict[str, Callable[[], Realizer]] = {
    "agent": AgentRealizer,
    "dry-run": DryRunRealizer,
}
# Realizers that act through the Kubernetes API: built with the Kubernetes settings.
KUBE_REALIZERS: dict[str, Callable[[KubeSettings, KubeApi | None], Realizer]] = {
    "spark-operator": _spark_operator,
}


def replaces(name: str) -> bool:
    """Whether the realizer called ``name`` can replace a job's executors: the agent's and the
    dry run's can; those acting through Kubernetes cannot."""
    return name in REALIZERS


def make_realizer(
    name: str, kube: KubeSettings | None = None, *, kube_api: KubeApi | None = None
) -> Realizer:
    """The realizer called ``name``. One acting through Kubernetes needs ``kube`` (its managed
    namespaces, labels and kubeconfig) and talks to ``kube_api`` when given, else connects."""
    if name in REALIZERS:
        return REALIZERS[name]()
    if name in KUBE_REALIZERS:
        if kube is None:
            raise ValueError(f"the {name} realizer needs the Kubernetes settings")
        return KUBE_REALIZERS[name](kube, kube_api)
    known = ", ".join([*REALIZERS, *KUBE_REALIZERS])
    raise ValueError(f"unknown realizer {name!r}; known: {known}")
