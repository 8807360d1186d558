"""Liveness, readiness and Prometheus metrics (no token needed)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from scheduler.api.errors import RETRY_AFTER_S
from scheduler.registry.migrate import current_revision, head_revision

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
def readyz(request: Request, response: Response) -> dict[str, str]:
    engine = request.app.state.engine
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        revision = current_revision(engine)
    except SQLAlchemyError as exc:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return {"status": "database unreachable", "error": type(exc).__name__}
    if revision != head_revision():
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        return {"status": "schema behind; run `henge migrate`", "revision": str(revision)}
    return {"status": "ready", "revision": str(revision)}


@router.get("/metrics")
def metrics(request: Request) -> Response:
    return Response(
        generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST
    )
