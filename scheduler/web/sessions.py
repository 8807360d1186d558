"""Dashboard sessions: an opaque random id in the cookie, the principal kept here in memory.

The cookie never carries a token. Ids are looked up by their SHA-256 digest, so the lookup
time tells nothing about stored ids. Sessions end after ``ttl_s`` (absolute), at logout, or
when the process stops (one ``henge serve`` process serves the pages and the API).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from scheduler.api.auth import Principal

DEFAULT_TTL_S = 8 * 3600.0
MAX_SESSIONS = 10_000


@dataclass(frozen=True)
class WebSession:
    principal: Principal
    expires_at: float


def _digest(sid: str) -> str:
    return hashlib.sha256(sid.encode()).hexdigest()


class SessionStore:
    def __init__(
        self,
        ttl_s: float = DEFAULT_TTL_S,
        max_sessions: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self._max = max_sessions
        self._clock = clock
        self._sessions: dict[str, WebSession] = {}
        self._lock = threading.Lock()

    def create(self, principal: Principal) -> str:
        """A new session for ``principal``; returns its id (for the cookie only)."""
        sid = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            self._purge(now)
            while len(self._sessions) >= self._max:  # the oldest go first (dicts keep order)
                del self._sessions[next(iter(self._sessions))]
            self._sessions[_digest(sid)] = WebSession(principal, now + self.ttl_s)
        return sid

    def lookup(self, sid: str | None) -> Principal | None:
        if not sid:
            return None
        key = _digest(sid)
        with self._lock:
            found = self._sessions.get(key)
            if found is None:
                return None
            if found.expires_at <= self._clock():
                del self._sessions[key]
                return None
            return found.principal

    def revoke(self, sid: str | None) -> None:
        if sid:
            with self._lock:
                self._sessions.pop(_digest(sid), None)

    def __len__(self) -> int:
        with self._lock:
            self._purge(self._clock())
            return len(self._sessions)

    def _purge(self, now: float) -> None:
        for key in [k for k, s in self._sessions.items() if s.expires_at <= now]:
            del self._sessions[key]
