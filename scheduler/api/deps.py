"""Request-scoped resources."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Request
from sqlalchemy.orm import Session


def get_session(request: Request) -> Iterator[Session]:
    """One session per request; routes commit what they change, anything else is rolled back."""
    session: Session = request.app.state.session_factory()
    try:
        yield session
    finally:
        session.close()
