"""Turning refusals into HTTP answers in FastAPI's own error format."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import HTTPException, status
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from scheduler.core.slo import SLOError
from scheduler.registry.repository import (
    ConflictError,
    NotFoundError,
    RegistryError,
)

RETRY_AFTER_S = 5
"""Seconds a client is told to wait while the registry cannot be reached."""
REGISTRY_UNAVAILABLE: tuple[type[Exception], ...] = (OperationalError, InterfaceError, PoolTimeout)
"""What the database driver and pool raise while the registry cannot be reached (503)."""


def field_error(
    code: int, loc: Sequence[str | int], message: str, where: str = "body"
) -> HTTPException:
    """An error naming the field (of the body, or ``where`` says: ``"query"``), shaped like
    FastAPI's validation errors."""
    return HTTPException(code, [{"loc": [where, *loc], "msg": message, "type": "value_error"}])


def from_slo_error(error: SLOError, prefix: tuple[str, ...] = ()) -> HTTPException:
    return field_error(
        status.HTTP_422_UNPROCESSABLE_CONTENT, [*prefix, *error.field.split(".")], error.message
    )


def from_registry_error(error: RegistryError) -> HTTPException:
    code = {
        NotFoundError: status.HTTP_404_NOT_FOUND,
        ConflictError: status.HTTP_409_CONFLICT,
    }.get(type(error), status.HTTP_400_BAD_REQUEST)
    if error.field is None:
        return HTTPException(code, error.message)
    return field_error(code, error.field.split("."), error.message)
