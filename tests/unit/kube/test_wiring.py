"""`HENGE_CLUSTER_VIEW=kubernetes` and `HENGE_REALIZER=spark-operator` build from the environment
(a kubeconfig; no cluster is contacted until a round runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.cluster.kubernetes import KubernetesCluster
from scheduler.cluster.spark_standalone import SparkStandaloneCluster
from scheduler.config import Settings
from scheduler.realize.registry import make_realizer
from scheduler.realize.spark_operator import SparkOperatorRealizer
from scheduler.service import make_cluster_source

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "https://k8s.test:6443", insecure-skip-tls-verify: true}
users:
- name: henge
  user: {token: test-token}
contexts:
- name: test
  context: {cluster: test, user: henge}
current-context: test
"""


@pytest.fixture
def kube_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HENGE_KUBECONFIG", str(config))
    monkeypatch.setenv("HENGE_KUBE_NAMESPACES", "team-ads, team-web")


def test_kubernetes_cluster_view_from_settings(kube_env: None) -> None:
    source = make_cluster_source(Settings(cluster_view="kubernetes"))
    assert isinstance(source, KubernetesCluster)
    assert source.settings.namespaces == ("team-ads", "team-web")
    assert source.settings.executor_selector == "spark-role=executor"
    assert source.api.api_client.configuration.host == "https://k8s.test:6443"


def test_spark_operator_realizer_by_name(kube_env: None) -> None:
    realizer = make_realizer("spark-operator")
    assert isinstance(realizer, SparkOperatorRealizer)
    assert realizer.name == "spark-operator"
    assert realizer.settings.job_label == "henge.io/job-id"


def test_spark_standalone_view_needs_the_master_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HENGE_SPARK_MASTER_UI_URL", raising=False)
    with pytest.raises(ValueError, match="HENGE_SPARK_MASTER_UI_URL"):
        make_cluster_source(Settings(cluster_view="spark-standalone"))
    monkeypatch.setenv("HENGE_SPARK_MASTER_UI_URL", "http://127.0.0.1:8080")
    source = make_cluster_source(Settings(cluster_view="spark-standalone"))
    assert isinstance(source, SparkStandaloneCluster)


def test_unknown_cluster_view_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: static, spark-standalone, kubernetes"):
        make_cluster_source(Settings(cluster_view="mesos"))
