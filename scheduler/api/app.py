"""The FastAPI application of the HTTP API: routes, error handling, body limits and request
logging. The service mounts the dashboard (:mod:`scheduler.web`) on top of it."""

from __future__ import annotations

import time
from typing import Any

import structlog
from fastapi import FastAPI, Request, Response, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scheduler.api.errors import REGISTRY_UNAVAILABLE, RETRY_AFTER_S
from scheduler.api.round_cache import RoundCache
from scheduler.api.routes import health, jobs, reports, rounds, tenants
from scheduler.clock import Clock, utc_now
from scheduler.cluster.port import ClusterSource
from scheduler.config import Settings
from scheduler.prometheus import ServiceMetrics
from scheduler.registry.engine import make_session_factory

log = structlog.get_logger("henge.api")


def create_app(
    settings: Settings,
    engine: Engine,
    cluster_source: ClusterSource,
    *,
    clock: Clock = utc_now,
    metrics: ServiceMetrics | None = None,
) -> FastAPI:
    app = FastAPI(
        title="Henge for Spark",
        version="0.1.0",
        description="SLO-driven scheduler for Spark Structured Streaming jobs.",
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.session_factory = make_session_factory(engine)
    # Reports: each statement commits on its own (no BEGIN and COMMIT round trips).
    app.state.report_session_factory = make_session_factory(
        engine.execution_options(isolation_level="AUTOCOMMIT")
    )
    app.state.cluster_source = cluster_source
    app.state.clock = clock
    app.state.metrics = metrics or ServiceMetrics()
    app.state.round_cache = RoundCache()
    for module in (health, tenants, jobs, reports, rounds):
        app.include_router(module.router)
    app.add_exception_handler(RequestValidationError, _validation_error)
    for unavailable in REGISTRY_UNAVAILABLE:
        app.add_exception_handler(unavailable, _registry_unavailable)
    app.add_middleware(RequestLog)
    app.add_middleware(BodyLimit, max_bytes=settings.max_report_bytes)
    return app


async def _registry_unavailable(request: Request, exc: Exception) -> Response:
    """The registry is down or unreachable: 503 at once, with when to try again, instead of a
    500 (nothing was stored; the client may resend)."""
    log.warning("registry.unavailable", path=request.url.path, error=type(exc).__name__)
    if _reports_path(request.url.path):
        request.app.state.metrics.report_rejected("unavailable")
    return JSONResponse(
        {"detail": "the registry is unavailable; try again later"},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = jsonable_encoder(exc.errors(), exclude={"input", "ctx", "url"})
    if _reports_path(request.url.path):
        request.app.state.metrics.report_rejected("invalid")
    log.info(
        "request.invalid",
        path=request.url.path,
        fields=[".".join(str(p) for p in e.get("loc", ())) for e in errors],
    )
    return JSONResponse({"detail": errors}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


class RequestLog:
    """One log line per request (debug when it succeeded, info when refused, error on 5xx).

    Never logs headers or query strings: they may carry tokens. Plain ASGI rather than
    ``BaseHTTPMiddleware``, which costs a task and a queue per request.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status_code = 500
        # Each request starts with a clean log context; routes bind the tenant and job.
        structlog.contextvars.clear_contextvars()

        async def send_and_note(message: Message) -> None:
            nonlocal status_code
            if message["type"] == "http.response.start":
                status_code = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            fields: dict[str, Any] = {
                "method": scope["method"],
                "path": scope["path"],
                "status": status_code,
                "ms": round((time.perf_counter() - started) * 1000, 2),
            }
            if status_code >= 500:
                log.error("request.failed", **fields)
            elif status_code >= 400:
                log.info("request.refused", **fields)
            else:
                log.debug("request", **fields)


class BodyLimit:
    """Refuses request bodies over ``max_bytes`` with 413, by header or while streaming."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._too_large(scope, receive, send)
            return
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counting_receive, send)
        except _TooLarge:
            await self._too_large(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope.get("app")
        if app is not None and _reports_path(str(scope.get("path", ""))):
            app.state.metrics.report_rejected("too_large")
        response = JSONResponse(
            {"detail": f"request body larger than {self.max_bytes} bytes"},
            status_code=status.HTTP_413_CONTENT_TOO_LARGE,
        )
        await response(scope, receive, send)


def _reports_path(path: str) -> bool:
    """Whether ``path`` is an agent's report route (counted in the report metrics)."""
    return path.endswith(("/reports", "/reports/batch"))


class _TooLarge(Exception):
    pass
