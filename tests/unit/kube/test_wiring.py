"""`henge serve` builds the kubernetes cluster view and the spark-operator realizer from
`Settings` (a kubeconfig, or a replayed API; no cluster is contacted until a round runs), and
the managed namespaces of the settings are where both look."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.cluster.kubernetes import KubernetesCluster
from scheduler.cluster.spark_standalone import SparkStandaloneCluster
from scheduler.config import Settings, load_settings
from scheduler.core.model import Change
from scheduler.kube.settings import KubeSettings
from scheduler.realize.agent import AgentRealizer
from scheduler.realize.registry import make_realizer
from scheduler.realize.spark_operator import SparkOperatorRealizer
from scheduler.service import kube_settings, make_cluster_source, realizer_for
from tests.unit.kube.replay import replay_api
from tests.unit.kube.test_cluster_view import ADS_PODS, ALL_PODS, WEB_PODS, routes
from tests.unit.kube.test_spark_operator import APPS, WEB_APPS

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
ALL_APPS = "/apis/sparkoperator.k8s.io/v1beta2/sparkapplications"


@pytest.fixture
def kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    config = tmp_path / "kubeconfig"
    config.write_text(KUBECONFIG)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return str(config)


def test_kubernetes_cluster_view_from_settings(kubeconfig: str) -> None:
    settings = Settings(
        cluster_view="kubernetes", kubeconfig=kubeconfig, managed_namespaces=["team-ads"]
    )
    source = make_cluster_source(settings)
    assert isinstance(source, KubernetesCluster)
    assert source.settings.namespaces == ("team-ads",)
    assert source.settings.executor_selector == "spark-role=executor"
    assert source.api.api_client.configuration.host == "https://k8s.test:6443"


def test_spark_operator_realizer_from_settings(kubeconfig: str) -> None:
    realizer = realizer_for(Settings(realizer="spark-operator", kubeconfig=kubeconfig))
    assert isinstance(realizer, SparkOperatorRealizer)
    assert realizer.name == "spark-operator"
    assert realizer.settings.job_label == "henge.io/job-id"
    assert realizer.settings.namespaces == ()
    assert isinstance(realizer_for(Settings(realizer="agent")), AgentRealizer)


def test_a_kubernetes_realizer_needs_the_kubernetes_settings() -> None:
    with pytest.raises(ValueError, match="needs the Kubernetes settings"):
        make_realizer("spark-operator")
    with pytest.raises(ValueError, match="known: agent, dry-run, spark-operator"):
        make_realizer("yarn")


def test_kube_settings_come_from_the_environment(
    kubeconfig: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HENGE_MANAGED_NAMESPACES", '["team-ads", "team-web"]')
    monkeypatch.setenv("HENGE_KUBE_EXECUTOR_SELECTOR", "spark-role=executor,team=ads")
    monkeypatch.setenv("HENGE_KUBE_JOB_LABEL", "example.com/henge-job")
    monkeypatch.setenv("HENGE_KUBECONFIG", kubeconfig)
    monkeypatch.setenv("HENGE_KUBE_CONTEXT", "test")
    assert kube_settings(load_settings()) == KubeSettings(
        namespaces=("team-ads", "team-web"),
        executor_selector="spark-role=executor,team=ads",
        job_label="example.com/henge-job",
        kubeconfig=kubeconfig,
        context="test",
    )


@pytest.mark.parametrize("value", ['["team-ads", "team-web"]', "team-ads, team-web"])
def test_managed_namespaces_reach_the_cluster_view_and_the_realizer(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HENGE_MANAGED_NAMESPACES (as the Helm chart sets it, or comma-separated) restricts what
    the view counts and where the realizer looks, as `henge serve` wires them."""
    monkeypatch.setenv("HENGE_MANAGED_NAMESPACES", value)
    settings = load_settings(cluster_view="kubernetes", realizer="spark-operator")
    table = routes(
        **{
            f"GET {APPS}": (200, "sparkapplications-team-ads.json"),
            f"GET {WEB_APPS}": (200, "sparkapplications-empty.json"),
            f"PATCH {APPS}/pageload": (200, "sparkapplication-patched.json"),
        }
    )
    api, transport = replay_api(table)

    make_cluster_source(settings, kube_api=api).view([])
    pods = [r for r in transport.requests if r.path.endswith("/pods")]
    assert [r.path for r in pods] == [ADS_PODS[1], WEB_PODS[1]]

    change = Change("job-pageload-1", 3, 5, "eq. 2.4")
    assert list(realizer_for(settings, kube_api=api).apply([change])) == [change]
    apps = [r for r in transport.requests if r.path.endswith("/sparkapplications")]
    assert [r.path for r in apps] == [APPS, WEB_APPS]
    assert [r.path for r in transport.requests if r.method == "PATCH"] == [f"{APPS}/pageload"]


def test_without_managed_namespaces_both_look_in_every_namespace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HENGE_MANAGED_NAMESPACES", raising=False)
    settings = load_settings(cluster_view="kubernetes", realizer="spark-operator")
    table = routes(
        **{
            f"GET {ALL_PODS[1]}": (200, "pods-team-ads.json"),
            f"GET {ALL_APPS}": (200, "sparkapplications-empty.json"),
        }
    )
    api, transport = replay_api(table)
    make_cluster_source(settings, kube_api=api).view([])
    realizer_for(settings, kube_api=api).apply([Change("job-agent-run", 1, 2, "eq. 2.4")])
    lists = [r.path for r in transport.requests if r.path.endswith(("/pods", "applications"))]
    assert lists == [ALL_PODS[1], ALL_APPS]


def test_spark_standalone_view_needs_the_master_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HENGE_SPARK_MASTER_UI_URL", raising=False)
    with pytest.raises(ValueError, match="HENGE_SPARK_MASTER_UI_URL"):
        make_cluster_source(Settings(cluster_view="spark-standalone"))
    monkeypatch.setenv("HENGE_SPARK_MASTER_UI_URL", "http://127.0.0.1:8080")
    source = make_cluster_source(Settings(cluster_view="spark-standalone"))
    assert isinstance(source, SparkStandaloneCluster)
    assert source.master_ui_url == "http://127.0.0.1:8080"


def test_unknown_cluster_view_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: static, spark-standalone, kubernetes"):
        make_cluster_source(Settings(cluster_view="mesos"))
