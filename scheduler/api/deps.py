"""Request-scoped resources."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import closing

from fastapi import Request
from sqlalchemy.orm import Session


async def get_session(request: Request) -> AsyncIterator[Session]:
    """One session per request; routes commit what they change, anything else is rolled back.

    Async on purpose: opening a session does no I/O, and an async dependency costs no trip
    through the threadpool. Routes run in the threadpool and use the session there.
    """
    with closing(request.app.state.session_factory()) as session:
        yield session


async def get_report_session(request: Request) -> AsyncIterator[Session]:
    """A session whose every statement commits on its own, for agents' reports: a report
    request reads its job and newest window, then stores its windows in one statement, so a
    transaction around the two would only add its BEGIN and COMMIT, two more round trips to
    the registry on the service's hottest path. (Two requests of the same agent racing are
    settled by the insert's conflict clause, as in a transaction.)"""
    with closing(request.app.state.report_session_factory()) as session:
        yield session
