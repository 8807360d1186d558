"""The settings classes of scheduler.config: the forms their variables take in the environment."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from henge_agent import settings as agent_settings
from scheduler.api_client import ClientConfig, resolve_config
from scheduler.config import ClientSettings, Settings


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ('["spark-a", "spark-b"]', ["spark-a", "spark-b"]),  # the Helm chart's form
        ("spark-a,spark-b", ["spark-a", "spark-b"]),
        (" spark-a , spark-b, ", ["spark-a", "spark-b"]),
        ("spark-a", ["spark-a"]),
        ("[]", []),
        ("", []),
    ],
)
def test_managed_namespaces_from_the_environment(
    value: str, names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HENGE_MANAGED_NAMESPACES", value)
    assert Settings().managed_namespaces == names


def test_managed_namespaces_reject_a_broken_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HENGE_MANAGED_NAMESPACES", '["spark-a", ')
    with pytest.raises(ValidationError, match="not a JSON list"):
        Settings()


def test_kubernetes_and_spark_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KUBE_EXECUTOR_SELECTOR", "KUBE_JOB_LABEL", "KUBECONFIG", "KUBE_CONTEXT"):
        monkeypatch.delenv(f"HENGE_{name}", raising=False)
    monkeypatch.delenv("HENGE_MANAGED_NAMESPACES", raising=False)
    monkeypatch.delenv("HENGE_SPARK_MASTER_UI_URL", raising=False)
    settings = Settings()
    assert settings.managed_namespaces == []
    assert settings.kube_executor_selector == "spark-role=executor"
    assert settings.kube_job_label == "henge.io/job-id"
    assert settings.kubeconfig is None and settings.kube_context is None
    assert settings.spark_master_ui_url is None


def test_empty_kubernetes_variables_mean_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KUBE_EXECUTOR_SELECTOR", "KUBE_JOB_LABEL", "KUBECONFIG", "KUBE_CONTEXT"):
        monkeypatch.setenv(f"HENGE_{name}", "")
    monkeypatch.setenv("HENGE_SPARK_MASTER_UI_URL", "")
    settings = Settings()
    assert settings.kube_executor_selector == "spark-role=executor"  # never "every pod"
    assert settings.kube_job_label == "henge.io/job-id"
    assert settings.kubeconfig is None and settings.kube_context is None
    assert settings.spark_master_ui_url is None


@pytest.fixture
def no_client_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("HENGE_URL", "HENGE_TOKEN", "HENGE_CONFIG", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_client_config_file_default_xdg_and_explicit(
    no_client_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ClientSettings().config_file() == no_client_env / ".config" / "henge" / "cli.yaml"
    monkeypatch.setenv("XDG_CONFIG_HOME", "/etc/xdg-user")
    assert ClientSettings().config_file() == Path("/etc/xdg-user/henge/cli.yaml")
    monkeypatch.setenv("HENGE_CONFIG", "/srv/henge.yaml")
    assert ClientSettings().config_file() == Path("/srv/henge.yaml")


def test_client_url_and_token(no_client_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unset = ClientSettings()
    assert unset.url is None and unset.token_value() is None
    monkeypatch.setenv("HENGE_URL", "http://henge.example:8080")
    monkeypatch.setenv("HENGE_TOKEN", "hgt_secret")
    given = ClientSettings()
    assert given.url == "http://henge.example:8080"
    assert given.token_value() == "hgt_secret"
    assert "hgt_secret" not in repr(given)


def test_empty_client_variables_count_as_unset(
    no_client_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HENGE_URL", "HENGE_TOKEN", "HENGE_CONFIG", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, "")
    settings = ClientSettings()
    assert settings.url is None and settings.token_value() is None
    assert settings.config_file() == no_client_env / ".config" / "henge" / "cli.yaml"


def test_client_precedence_flags_then_environment_then_config_file(
    no_client_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = no_client_env / ".config" / "henge" / "cli.yaml"
    stored.parent.mkdir(parents=True)
    stored.write_text("url: http://from-file:8080/\ntoken: file-token\n")
    assert resolve_config(None, None) == ClientConfig("http://from-file:8080", "file-token")
    monkeypatch.setenv("HENGE_URL", "http://from-env:8080")
    monkeypatch.setenv("HENGE_TOKEN", "env-token")
    assert resolve_config(None, None) == ClientConfig("http://from-env:8080", "env-token")
    assert resolve_config("http://flag:8080", "flag-token") == ClientConfig(
        "http://flag:8080", "flag-token"
    )
    stored.unlink()
    for name in ("HENGE_URL", "HENGE_TOKEN"):
        monkeypatch.delenv(name)
    assert resolve_config(None, None) == ClientConfig("http://127.0.0.1:8080", None)


# ---- the documentation names only settings that exist -----------------------------------------

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "henge"
DOCUMENTED = [
    REPO / "docs" / "operations.md",
    REPO / "docs" / "kubernetes.md",
    REPO / "docs" / "agent.md",
    CHART / "values.yaml",
    CHART / "values.schema.json",
    *sorted((CHART / "templates").iterdir()),
]
# The agent reads its own variables in the tenant's driver (henge_agent.settings).
AGENT_VARIABLES = {
    agent_settings.ENV_URL,
    agent_settings.ENV_JOB_ID,
    agent_settings.ENV_TOKEN,
    agent_settings.ENV_TOKEN_FILE,
}


def variable_names(settings: type[Settings] | type[ClientSettings]) -> set[str]:
    prefix = settings.model_config.get("env_prefix", "")
    return {
        (
            field.validation_alias if isinstance(field.validation_alias, str) else prefix + name
        ).upper()
        for name, field in settings.model_fields.items()
    }


@pytest.mark.parametrize("path", DOCUMENTED, ids=lambda p: str(p.relative_to(REPO)))
def test_documented_variables_are_settings(path: Path) -> None:
    known = variable_names(Settings) | variable_names(ClientSettings) | AGENT_VARIABLES
    mentioned = set(re.findall(r"HENGE_[A-Z0-9_]*[A-Z0-9*]", path.read_text()))
    unknown = {
        name
        for name in mentioned
        if not (
            any(k.startswith(name[:-1]) for k in known) if name.endswith("*") else name in known
        )
    }
    assert not unknown, f"{path.name} names variables no setting has: {sorted(unknown)}"
