"""The kubernetes cluster view on Node, Pod and NodeMetrics objects replayed through the client."""

from __future__ import annotations

import pytest

from scheduler.cluster.kubernetes import KubernetesCluster, build_view, pod_requests
from scheduler.kube.client import KubeError, parse_quantity
from scheduler.kube.settings import KubeSettings
from tests.unit.kube.replay import fixture, replay_api

NODES = ("GET", "/api/v1/nodes")
METRICS = ("GET", "/apis/metrics.k8s.io/v1beta1/nodes")
ADS_PODS = ("GET", "/api/v1/namespaces/team-ads/pods")
WEB_PODS = ("GET", "/api/v1/namespaces/team-web/pods")
ALL_PODS = ("GET", "/api/v1/pods")
MANAGED = KubeSettings(namespaces=("team-ads", "team-web"))


def routes(**extra: tuple[int, str]) -> dict[tuple[str, str], tuple[int, str]]:
    table = {
        NODES: (200, "nodes.json"),
        METRICS: (200, "node-metrics.json"),
        ADS_PODS: (200, "pods-team-ads.json"),
        WEB_PODS: (200, "pods-team-web.json"),
    }
    table.update({tuple(k.split(" ", 1)): v for k, v in extra.items()})  # type: ignore[misc]
    return table


def test_nodes_allocatable_executor_requests_and_cpu_use() -> None:
    api, transport = replay_api(routes())
    view = KubernetesCluster(api, MANAGED).view([])
    nodes = {n.name: n for n in view.nodes}
    assert list(nodes) == ["pool-a-7f9c2", "pool-a-k2m8d", "pool-a-x4q1z", "pool-b-n0t9r"]

    a, b = nodes["pool-a-7f9c2"], nodes["pool-a-k2m8d"]
    assert a.cores == pytest.approx(3.92)
    assert a.memory_mb == pytest.approx(13574148 / 1024)
    # Two running pageload executors of 1 core / 2432 MiB on a; the pending one holds nothing.
    assert a.cores_requested == pytest.approx(2.0)
    assert a.memory_requested_mb == pytest.approx(2 * 2432)
    # One pageload executor and one wordcount executor of 500m on b; the finished one is gone.
    assert b.cores_requested == pytest.approx(1.5)
    assert b.memory_requested_mb == pytest.approx(2432 + 1408)
    assert a.cpu_used == pytest.approx(3.612457893)
    assert b.cpu_used == pytest.approx(1.204337612)
    assert a.ready and b.ready
    # Cordoned, and NotReady (kubelet stopped posting status): not counted.
    assert not nodes["pool-a-x4q1z"].ready
    assert not nodes["pool-b-n0t9r"].ready
    assert nodes["pool-b-n0t9r"].cpu_used is None
    assert view.total_cores == pytest.approx(7.84)
    assert view.free_cores == pytest.approx(3.92 - 2 + 3.92 - 1.5)

    pod_calls = [r for r in transport.requests if r.path.endswith("/pods")]
    assert [r.path for r in pod_calls] == [ADS_PODS[1], WEB_PODS[1]]
    assert all(r.query == {"labelSelector": ["spark-role=executor"]} for r in pod_calls)
    assert all(r.headers["authorization"] == "Bearer test-token" for r in transport.requests)


def test_all_namespaces_when_none_are_configured() -> None:
    api, transport = replay_api(routes(**{"GET /api/v1/pods": (200, "pods-team-ads.json")}))
    view = KubernetesCluster(api, KubeSettings()).view([])
    assert {n.name: n.cores_requested for n in view.nodes}["pool-a-7f9c2"] == 2.0
    assert [r.path for r in transport.requests if r.path.endswith("pods")] == [ALL_PODS[1]]


def test_without_the_metrics_api_cpu_use_is_unknown() -> None:
    api, _ = replay_api(
        routes(**{"GET /apis/metrics.k8s.io/v1beta1/nodes": (404, "status-404-not-found.json")})
    )
    view = KubernetesCluster(api, MANAGED).view([])
    assert all(n.cpu_used is None for n in view.nodes)
    assert view.free_cores == pytest.approx(4.34)


def test_an_api_failure_reuses_the_last_view_and_fails_without_one() -> None:
    api, transport = replay_api(routes())
    cluster = KubernetesCluster(api, MANAGED)
    first = cluster.view([])
    transport.routes[NODES] = (403, "status-404-not-found.json")
    assert cluster.view([]) is first

    fresh, _ = replay_api(routes(**{"GET /api/v1/nodes": (403, "status-404-not-found.json")}))
    with pytest.raises(KubeError) as error:
        KubernetesCluster(fresh, MANAGED).view([])
    assert error.value.status == 403
    assert "could not find" in str(error.value)


def test_pod_requests_count_init_containers_and_overhead() -> None:
    pod = fixture("pods-team-ads.json")["items"][0]
    assert pod_requests(pod) == (parse_quantity("1"), parse_quantity("2432Mi"))
    pod["spec"]["initContainers"] = [{"name": "fetch", "resources": {"requests": {"cpu": "2"}}}]
    pod["spec"]["overhead"] = {"cpu": "250m", "memory": "120Mi"}
    cpu, memory = pod_requests(pod)
    assert float(cpu) == pytest.approx(2.25)
    assert memory == parse_quantity("2432Mi") + parse_quantity("120Mi")


def test_build_view_from_objects_directly() -> None:
    view = build_view(fixture("nodes.json")["items"], [], None)
    assert view.free_cores == pytest.approx(7.84)


@pytest.mark.parametrize(
    ("text", "value"),
    [("250m", 0.25), ("2", 2), ("3920m", 3.92), ("1536Mi", 1536 * 2**20), ("12345n", 12345e-9),
     ("1e3", 1000), ("13574148Ki", 13574148 * 1024), ("1.5Gi", 1.5 * 2**30)],
)  # fmt: skip
def test_quantities(text: str, value: float) -> None:
    assert float(parse_quantity(text)) == pytest.approx(value)


def test_a_bad_quantity_is_an_error() -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity("lots")
