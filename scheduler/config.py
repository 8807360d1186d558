"""Settings, read from the environment (prefix ``HENGE_``) and an optional ``.env`` file.

Nothing here runs at import time: call :func:`load_settings` from an entry point.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATABASE_URL = "sqlite:///henge.db"


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
    managed_namespaces: list[str] = Field(
        default_factory=list,
        description="Kubernetes namespaces whose Spark executors and applications Henge manages "
        "(JSON list, e.g. '[\"spark-jobs\"]'); used by the kubernetes view and spark-operator.",
    )
    static_nodes: int = Field(4, ge=1, description="Nodes of the static cluster view.")
    static_cores_per_node: int = Field(8, ge=1, description="Cores per node of the static view.")
    static_memory_mb_per_node: int = Field(
        32768, ge=1, description="Memory per node (MiB) of the static view."
    )
    leader_retry_s: float = Field(
        5.0, gt=0, description="How often a replica that is not the leader tries to become it."
    )
    metrics_max_jobs: int = Field(
        100, ge=0, description="Per-job utility is exported for at most this many jobs."
    )
    scheduler_enabled: bool = Field(
        True, description="Run scheduling rounds in `henge serve` (off: API only)."
    )

    retention_days: float = Field(
        30.0, gt=0, description="Metric windows older than this are purged."
    )
    max_report_bytes: int = Field(
        256 * 1024, ge=1024, description="Largest report body accepted, in bytes."
    )
    log_level: str = Field("info", description="debug, info, warning or error.")
    log_format: str = Field(
        "auto", description="json, console, or auto (console on a terminal, JSON otherwise)."
    )

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
