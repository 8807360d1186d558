"""Leader election: with several ``henge serve`` replicas, exactly one runs rounds.

The leader is the holder of a session-level Postgres advisory lock, taken on a connection kept
open for that purpose. When the leader process dies, its connection closes and Postgres
releases the lock at once; another replica takes it at its next attempt (every
``retry_s``). Every replica serves the API. On SQLite (one process owns the file) the only
process is the leader.
"""

from __future__ import annotations

import threading
import time

import structlog
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

log = structlog.get_logger("henge.leader")

# Key of the leader lock ("HENGL" in ASCII); the round lock uses another key.
LEADER_LOCK_KEY = 0x48454E474C


class Leadership:
    def __init__(self, engine: Engine, retry_s: float = 5.0) -> None:
        self.engine = engine
        self.retry_s = retry_s
        self._conn: Connection | None = None
        self._next_try = 0.0
        self._lock = threading.Lock()
        self._single = engine.dialect.name != "postgresql"

    def is_leader(self) -> bool:
        """Whether this replica leads now; tries to become leader when it is time to."""
        if self._single:
            return True
        with self._lock:
            if self._conn is not None and self._still_held():
                return True
            now = time.monotonic()
            if now < self._next_try:
                return False
            self._next_try = now + self.retry_s
            return self._try_acquire()

    def release(self) -> None:
        with self._lock:
            self._drop()

    def _try_acquire(self) -> bool:
        try:
            conn = self.engine.connect()
        except SQLAlchemyError as exc:
            log.warning("leader.unreachable", error=type(exc).__name__)
            return False
        try:
            got = bool(conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": LEADER_LOCK_KEY}))
            conn.commit()
        except SQLAlchemyError:
            conn.close()
            return False
        if not got:
            conn.close()
            return False
        self._conn = conn
        log.info("leader.acquired")
        return True

    def _still_held(self) -> bool:
        assert self._conn is not None
        try:
            self._conn.scalar(text("SELECT 1"))
            self._conn.commit()
            return True
        except SQLAlchemyError:
            log.warning("leader.lost", reason="the lock connection failed")
            self._drop()
            return False

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.invalidate()  # closing the session releases the lock server-side
                self._conn.close()
            except SQLAlchemyError:
                pass
            self._conn = None
