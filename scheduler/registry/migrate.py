"""Running the Alembic migrations from code, and telling whether a database is current."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine


def _migrations_dir() -> Path:
    package = Path(__file__).resolve().parent.parent
    for candidate in (package.parent / "migrations", package / "_migrations"):
        if (candidate / "env.py").exists():
            return candidate
    raise RuntimeError("the migrations folder is missing from this installation")


def alembic_config(url: str, connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    cfg.attributes["configure_logger"] = False
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def upgrade(url: str, revision: str = "head", connection: Connection | None = None) -> None:
    command.upgrade(alembic_config(url, connection), revision)


def downgrade(url: str, revision: str = "base", connection: Connection | None = None) -> None:
    command.downgrade(alembic_config(url, connection), revision)


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def schema_is_current(engine: Engine) -> bool:
    return current_revision(engine) == head_revision()
