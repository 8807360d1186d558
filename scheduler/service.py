"""Assembling the running service: registry engine, cluster view, API and scheduler loop."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
import uvicorn
from fastapi import FastAPI
from sqlalchemy import Engine

from scheduler.api.app import create_app
from scheduler.cluster.port import ClusterSource
from scheduler.cluster.static import StaticCluster
from scheduler.config import Settings
from scheduler.registry.engine import make_engine
from scheduler.registry.migrate import current_revision, head_revision

log = structlog.get_logger("henge.service")


class SchemaBehindError(RuntimeError):
    pass


def check_schema(engine: Engine) -> None:
    """Refuse to serve a registry whose schema is not the one this version expects."""
    current, head = current_revision(engine), head_revision()
    if current != head:
        raise SchemaBehindError(
            f"the registry schema is at revision {current or 'none (empty database)'} but this "
            f"version needs {head}: run `henge migrate` first"
        )


def make_cluster_source(settings: Settings) -> ClusterSource:
    if settings.cluster_view == "static":
        return StaticCluster(
            settings.static_nodes,
            settings.static_cores_per_node,
            settings.static_memory_mb_per_node,
        )
    raise ValueError(f"unknown cluster view {settings.cluster_view!r}; known: static")


@dataclass
class Service:
    settings: Settings
    engine: Engine
    app: FastAPI


def build_service(settings: Settings) -> Service:
    engine = make_engine(settings.database_url)
    check_schema(engine)
    app = create_app(settings, engine, make_cluster_source(settings))
    return Service(settings, engine, app)


def serve(settings: Settings) -> None:
    """Run the API (and, when enabled, the scheduler loop) until interrupted."""
    service = build_service(settings)
    log.info(
        "serve.start",
        host=settings.host,
        port=settings.port,
        database=_safe_url(settings.database_url),
        policy=settings.policy,
    )
    config = uvicorn.Config(
        service.app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
    )
    try:
        uvicorn.Server(config).run()
    finally:
        service.engine.dispose()


def _safe_url(url: str) -> str:
    from sqlalchemy import make_url

    return make_url(url).render_as_string(hide_password=True)
