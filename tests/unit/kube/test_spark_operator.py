"""The spark-operator realizer on SparkApplication objects replayed through the client."""

from __future__ import annotations

from scheduler.core.model import Change
from scheduler.kube.settings import KubeSettings
from scheduler.realize.spark_operator import SparkOperatorRealizer
from tests.unit.kube.replay import replay_api

APPS = "/apis/sparkoperator.k8s.io/v1beta2/namespaces/team-ads/sparkapplications"
WEB_APPS = "/apis/sparkoperator.k8s.io/v1beta2/namespaces/team-web/sparkapplications"
SETTINGS = KubeSettings(namespaces=("team-ads", "team-web"))


def realizer(**extra: tuple[int, str]) -> tuple[SparkOperatorRealizer, object]:
    routes = {
        ("GET", APPS): (200, "sparkapplications-team-ads.json"),
        ("GET", WEB_APPS): (200, "sparkapplications-empty.json"),
        ("PATCH", f"{APPS}/pageload"): (200, "sparkapplication-patched.json"),
    }
    routes.update({tuple(k.split(" ", 1)): v for k, v in extra.items()})  # type: ignore[misc]
    api, transport = replay_api(routes)
    return SparkOperatorRealizer(api, SETTINGS), transport


def test_patches_executor_instances_with_a_merge_patch() -> None:
    real, transport = realizer()
    change = Change("job-pageload-1", 3, 5, "eq. 2.4")
    assert list(real.apply([change])) == [change]
    lists = [r for r in transport.requests if r.method == "GET"]
    assert [r.path for r in lists] == [APPS, WEB_APPS]
    assert all(r.query == {"labelSelector": ["henge.io/job-id=job-pageload-1"]} for r in lists)
    (patch,) = [r for r in transport.requests if r.method == "PATCH"]
    assert patch.path == f"{APPS}/pageload"
    assert patch.headers["Content-Type"] == "application/merge-patch+json"
    assert patch.body == {"spec": {"executor": {"instances": 5}}}


def test_a_job_without_a_spark_application_is_left_to_its_agent() -> None:
    real, transport = realizer(**{f"GET {APPS}": (200, "sparkapplications-empty.json")})
    change = Change("job-agent-run", 1, 2, "eq. 2.4")
    assert list(real.apply([change])) == [change]
    assert not [r for r in transport.requests if r.method == "PATCH"]


def test_a_refused_patch_does_not_take_effect() -> None:
    real, _ = realizer(**{f"PATCH {APPS}/pageload": (403, "status-404-not-found.json")})
    assert list(real.apply([Change("job-pageload-1", 3, 5, "eq. 2.4")])) == []


def test_an_unreachable_api_does_not_take_effect_and_the_rest_goes_on() -> None:
    real, transport = realizer()
    transport.routes[("GET", APPS)] = (503, "status-404-not-found.json")
    other = Change("job-other", 1, 2, "eq. 2.4")
    assert list(real.apply([Change("job-pageload-1", 3, 5, "x"), other])) == []
    transport.routes[("GET", APPS)] = (200, "sparkapplications-empty.json")
    assert list(real.apply([other])) == [other]
