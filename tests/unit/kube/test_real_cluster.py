"""Against a real cluster when KUBECONFIG points at one; skipped otherwise. Read-only: it lists
nodes, executor pods and node metrics, and SparkApplications when the operator's CRD exists."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scheduler.cluster.kubernetes import KubernetesCluster
from scheduler.config import load_settings
from scheduler.kube.client import KubeApi, KubeError
from scheduler.service import kube_settings

KUBECONFIG = os.environ.get("KUBECONFIG", "")

pytestmark = pytest.mark.skipif(
    not KUBECONFIG or not all(Path(p).is_file() for p in KUBECONFIG.split(os.pathsep) if p),
    reason="no real cluster: KUBECONFIG is not set (or names no file)",
)


def test_the_cluster_view_of_a_real_cluster() -> None:
    api = KubeApi.from_config()
    settings = kube_settings(load_settings())
    view = KubernetesCluster(api, settings).view([])
    assert view.nodes, "a cluster has at least one node"
    assert all(n.cores > 0 and n.memory_mb > 0 for n in view.nodes)
    assert view.total_cores > 0
    metrics = api.node_metrics()
    assert metrics is None or {m["metadata"]["name"] for m in metrics} <= {
        n.name for n in view.nodes
    }


def test_spark_applications_list_when_the_operator_is_installed() -> None:
    api = KubeApi.from_config()
    try:
        apps = api.spark_applications(None, "henge.io/job-id")
    except KubeError as exc:
        if exc.status == 404:
            pytest.skip("the spark-operator CRD is not installed")
        raise
    assert all(a["kind"] == "SparkApplication" for a in apps)
