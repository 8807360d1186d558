"""structlog set-up, called once by each entry point."""

from __future__ import annotations

import logging
import sys

import structlog

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def configure_logging(level: str = "info", fmt: str = "auto", worker: int | None = None) -> None:
    """Route structlog and the standard library's logging to stderr, as JSON or for a console;
    every event of one of several server processes names its ``worker``."""
    use_console = fmt == "console" or (fmt == "auto" and sys.stderr.isatty())
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        *([_Stamp("worker", worker)] if worker is not None else []),
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor = (
        structlog.dev.ConsoleRenderer() if use_console else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    # Libraries (uvicorn, apscheduler, alembic) log through the standard library: keep them on
    # the same stream and level, and quiet the access log (requests are logged by the API).
    logging.basicConfig(
        level=_LEVELS[level],
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    logging.getLogger("apscheduler").setLevel(max(_LEVELS[level], logging.WARNING))


class _Stamp:
    """Adds one field with the same value to every event."""

    def __init__(self, key: str, value: object) -> None:
        self.key, self.value = key, value

    def __call__(
        self, logger: object, name: str, event: structlog.types.EventDict
    ) -> structlog.types.EventDict:
        event[self.key] = self.value
        return event
