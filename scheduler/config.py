"""Every setting of Henge, read from the environment (prefix ``HENGE_``).

- :class:`Settings`: the service (``henge serve``, ``henge migrate``), also from a ``.env`` file;
- :class:`ClientSettings`: the command line's connection to the API (URL, token, config file).

No other module reads the environment for a setting. Nothing here runs at import time: call
:func:`load_settings` (or build :class:`ClientSettings`) from an entry point.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///henge.db"
DEFAULT_EXECUTOR_SELECTOR = "spark-role=executor"
DEFAULT_JOB_LABEL = "henge.io/job-id"
DEFAULT_CLIENT_URL = "http://127.0.0.1:8080"


def parse_names(value: object) -> object:
    """A list of names from the environment: a JSON list (``'["a", "b"]'``, as the Helm chart
    writes it) or comma-separated (``a, b``); blanks are dropped, an empty value is no names."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError as exc:
                raise ValueError(f"not a JSON list of names: {exc}") from None
        else:
            value = text.split(",")
    if isinstance(value, list | tuple):
        names = [item.strip() if isinstance(item, str) else item for item in value]
        return [name for name in names if name != ""]
    return value


class Settings(BaseSettings):
    """Service settings. Each field maps to ``HENGE_<FIELD>`` in the environment."""

    model_config = SettingsConfigDict(env_prefix="HENGE_", env_file=".env", extra="ignore")

    database_url: str = Field(
        DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL of the registry. SQLite file for try-outs, Postgres in "
        "production (postgresql+psycopg://user@host/db).",
    )
    admin_token: SecretStr | None = Field(
        None,
        description="Bearer token of the admin. `henge serve` refuses to start without one unless "
        "--generate-admin-token is given.",
    )
    host: str = Field("127.0.0.1", description="Address the API listens on.")
    port: int = Field(8080, ge=1, le=65535, description="Port the API listens on.")

    round_interval_s: float = Field(10.0, gt=0, description="Seconds between scheduling rounds.")
    sub_window_s: float = Field(10.0, gt=0, description="Length of one agent report window.")
    window_s: float = Field(60.0, gt=0, description="Sliding window the metrics are judged over.")
    policy: str = Field("henge", description="Scheduling policy by name (see docs/policies.md).")
    policy_params: dict[str, Any] = Field(
        default_factory=dict,
        description="Overrides of the policy's settings as JSON, e.g. "
        '\'{"quiesce_s": 30, "min_gain": 0.1}\' (names in docs/policies.md).',
    )
    stale_after_s: float = Field(
        30.0, gt=0, description="A job with no report for this long is frozen (3 sub-windows)."
    )
    recovery_observe_s: float = Field(
        300.0, ge=0, description="After a collector outage, observe this long before acting."
    )
    realizer: str = Field(
        "agent", description="How allocations are applied: agent, dry-run (more in later releases)."
    )
    cluster_view: str = Field(
        "static", description="Where cluster capacity comes from: static (capacity from settings)."
    )
    spark_master_ui_url: str | None = Field(
        None,
        description="Web UI of the Spark standalone master, e.g. http://127.0.0.1:8080; needed "
        "by the spark-standalone cluster view.",
    )
    managed_namespaces: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Kubernetes namespaces whose Spark executor pods and SparkApplications Henge "
        'manages, as a JSON list (\'["spark-a", "spark-b"]\', the Helm chart\'s form) or '
        "comma-separated (spark-a,spark-b); empty: every namespace. Read by the kubernetes "
        "cluster view and the spark-operator realizer.",
    )
    kube_executor_selector: str = Field(
        DEFAULT_EXECUTOR_SELECTOR,
        description="Label selector of the Spark executor pods the kubernetes cluster view counts.",
    )
    kube_job_label: str = Field(
        DEFAULT_JOB_LABEL,
        description="Label of a SparkApplication that holds its Henge job id (spark-operator).",
    )
    kubeconfig: str | None = Field(
        None,
        description="Kubeconfig file of the Kubernetes API. Unset: in-cluster credentials in a "
        "pod, else $KUBECONFIG or ~/.kube/config.",
    )
    kube_context: str | None = Field(
        None, description="Context of the kubeconfig to use (unset: its current context)."
    )
    static_nodes: int = Field(4, ge=1, description="Nodes of the static cluster view.")
    static_cores_per_node: int = Field(8, ge=1, description="Cores per node of the static view.")
    static_memory_mb_per_node: int = Field(
        32768, ge=1, description="Memory per node (MiB) of the static view."
    )
    leader_retry_s: float = Field(
        5.0, gt=0, description="How often a replica that is not the leader tries to become it."
    )
    failpoint: Literal["round.decided", "round.published", "round.recorded"] | None = Field(
        None,
        description="For fault tests only: the process kills itself (SIGKILL) at this step of "
        "its next round that changes something: once the plan is decided, once its targets are "
        "published, or once the round and the new state are written but not committed.",
    )
    metrics_max_jobs: int = Field(
        100, ge=0, description="Per-job utility is exported for at most this many jobs."
    )
    scheduler_enabled: bool = Field(
        True, description="Run scheduling rounds in `henge serve` (off: API only)."
    )
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="Server processes `henge serve` starts on one listening socket. Each serves "
        "the API; the first also runs the rounds and the background work. More than one uses "
        "more cores for report ingestion (each holds its own pool of registry connections).",
    )

    retention_days: float = Field(
        30.0, gt=0, description="Metric windows and rounds older than this are purged."
    )
    purge_interval_s: float = Field(
        3600.0, gt=0, description="Seconds between two retention purges."
    )
    history_days: float = Field(
        35.0,
        gt=0,
        description="Each job's input per minute (rolled up from its metric windows) is kept "
        "this long, apart from the windows' retention: five weeks show a weekly pattern.",
    )
    history_rollup_s: float = Field(
        60.0,
        gt=0,
        description="Seconds between two roll-ups of newly received metric windows into each "
        "job's input per minute.",
    )
    forecast_interval_s: float = Field(
        3600.0,
        gt=0,
        description="Seconds between two fits of every job's input forecast from its input "
        "history (a round reads the latest; henge forecast fit fits them at once).",
    )
    max_report_bytes: int = Field(
        256 * 1024, ge=1024, description="Largest report body accepted, in bytes."
    )
    log_level: str = Field("info", description="debug, info, warning or error.")
    log_format: str = Field(
        "auto", description="json, console, or auto (console on a terminal, JSON otherwise)."
    )

    @field_validator("managed_namespaces", mode="before")
    @classmethod
    def _names(cls, value: object) -> object:
        return parse_names(value)

    @field_validator("spark_master_ui_url", "kubeconfig", "kube_context", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if value == "" else value

    @field_validator("kube_executor_selector", "kube_job_label", mode="before")
    @classmethod
    def _empty_is_default(cls, value: object, info: ValidationInfo) -> object:
        # An empty selector would select every pod: an empty value means the default.
        return cls.model_fields[str(info.field_name)].default if value == "" else value

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        value = value.lower()
        if value not in {"debug", "info", "warning", "error"}:
            raise ValueError("must be one of debug, info, warning, error")
        return value

    @field_validator("log_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        value = value.lower()
        if value not in {"json", "console", "auto"}:
            raise ValueError("must be one of json, console, auto")
        return value


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment; keyword overrides win (used by the CLI flags)."""
    clean = {key: value for key, value in overrides.items() if value is not None}
    return Settings(**clean)  # type: ignore[arg-type]


class ClientSettings(BaseSettings):
    """The command line's connection to the API. ``url`` and ``token`` are unset unless
    ``HENGE_URL`` / ``HENGE_TOKEN`` are: flags win over them, and they win over the config file
    (:meth:`config_file`). Empty variables count as unset; no ``.env`` file is read."""

    model_config = SettingsConfigDict(env_prefix="HENGE_", extra="ignore", env_ignore_empty=True)

    url: str | None = Field(
        default=None,
        description=f"URL of the Henge API (else the config file's, else {DEFAULT_CLIENT_URL}).",
    )
    token: SecretStr | None = Field(
        default=None, description="Bearer token (admin or tenant); else the config file's."
    )
    config: Path | None = Field(
        default=None,
        description="The command line's config file (YAML with url and token); default "
        "$XDG_CONFIG_HOME/henge/cli.yaml, else ~/.config/henge/cli.yaml.",
    )
    xdg_config_home: Path | None = Field(
        default=None,
        validation_alias="XDG_CONFIG_HOME",
        description="The XDG base directory of user configuration (XDG_CONFIG_HOME, no prefix).",
    )

    def config_file(self) -> Path:
        """Where the config file is: ``HENGE_CONFIG``, else ``$XDG_CONFIG_HOME/henge/cli.yaml``,
        else ``~/.config/henge/cli.yaml``."""
        if self.config is not None:
            return self.config
        return (self.xdg_config_home or Path.home() / ".config") / "henge" / "cli.yaml"

    def token_value(self) -> str | None:
        return self.token.get_secret_value() if self.token is not None else None
