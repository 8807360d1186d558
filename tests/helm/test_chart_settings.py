"""The chart sets only settings the service reads: every HENGE_* variable of the rendered objects
(container env entries, ConfigMap data, Secret data and stringData keys) is a field of
scheduler.config.Settings, and the ConfigMap, loaded as the environment, gives the Settings the
chart's values mean (the managed namespaces above all)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from scheduler.config import Settings
from scheduler.service import kube_settings
from tests.helm.conftest import Helm
from tests.helm.test_chart import FULL, MINIMAL, one, render

pytestmark = pytest.mark.helm

RENDERS = {"minimal": MINIMAL, "full": FULL}


@pytest.fixture(scope="module", params=list(RENDERS))
def rendered(request: pytest.FixtureRequest, helm: Helm) -> tuple[str, list[dict[str, Any]]]:
    return request.param, render(helm, RENDERS[request.param])


def setting_names() -> set[str]:
    prefix = Settings.model_config["env_prefix"]
    return {f"{prefix}{name}".upper() for name in Settings.model_fields}


def chart_variables(objects: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Each HENGE_* name the objects set, with where it is set."""
    found: dict[str, set[str]] = {}

    def add(names: Any, where: str) -> None:
        for name in names:
            if name.startswith("HENGE_"):
                found.setdefault(name, set()).add(where)

    for obj in objects:
        where = f"{obj['kind']} {obj['metadata']['name']}"
        if obj["kind"] == "ConfigMap":
            add(obj.get("data") or {}, where)
        if obj["kind"] == "Secret":
            add([*(obj.get("data") or {}), *(obj.get("stringData") or {})], where)
        pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in [*pod.get("containers", ()), *pod.get("initContainers", ())]:
            add([e["name"] for e in container.get("env") or ()], f"{where} env")
    return found


def test_every_variable_the_chart_sets_is_a_setting(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    _, objects = rendered
    found = chart_variables(objects)
    assert {"HENGE_DATABASE_URL", "HENGE_ADMIN_TOKEN", "HENGE_MANAGED_NAMESPACES"} <= found.keys()
    unknown = {name: sorted(where) for name, where in found.items() if name not in setting_names()}
    assert not unknown, f"set by the chart but no field of scheduler.config.Settings: {unknown}"


def test_the_configmap_as_environment_gives_the_charts_settings(
    rendered: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    which, objects = rendered
    values = RENDERS[which]
    for name in [n for n in os.environ if n.upper().startswith("HENGE_")]:
        monkeypatch.delenv(name)
    for name, value in one(objects, "ConfigMap")["data"].items():
        monkeypatch.setenv(name, value)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]

    namespaces = values.get("managedNamespaces", [])
    assert settings.managed_namespaces == namespaces
    assert kube_settings(settings).namespaces == tuple(namespaces)
    config = values.get("config", {})
    assert settings.realizer == config.get("realizer", "agent")
    assert settings.cluster_view == config.get("clusterView", "static")
    assert settings.round_interval_s == config.get("roundIntervalS", 10)
    assert settings.log_level == config.get("logLevel", "info")
