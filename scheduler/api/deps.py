"""Request-scoped resources."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import Request
from sqlalchemy.orm import Session


async def get_session(request: Request) -> AsyncIterator[Session]:
    """One session per request; routes commit what they change, anything else is rolled back.

    Async on purpose: opening a session does no I/O, and an async dependency costs no trip
    through the threadpool. Routes run in the threadpool and use the session there.
    """
    session: Session = request.app.state.session_factory()
    try:
        yield session
    finally:
        session.close()
