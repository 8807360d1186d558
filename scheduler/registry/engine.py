"""Engine and session factories."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

CONNECT_TIMEOUT_S = 3


def make_engine(url: str, *, pool_size: int = 10, max_overflow: int = 30) -> Engine:
    """An engine for ``url``; SQLite gets foreign keys and WAL, Postgres a sized pool.

    The API's sync routes run in a threadpool of 40 threads: with at most ``pool_size +
    max_overflow`` = 40 connections no thread ever waits for a connection that another request
    holds while it waits for a thread. Connections are recycled instead of pinged on checkout
    (a ping is one more round trip per request).
    """
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # A registry that cannot be reached must fail a request within seconds (the API answers 503),
    # not hang on a connection attempt until the operating system gives up.
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_recycle=1800,
        pool_timeout=30,
        connect_args={"connect_timeout": CONNECT_TIMEOUT_S},
    )


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
