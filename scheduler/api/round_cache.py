"""The current round number for report answers, read from the registry at most once a second."""

from __future__ import annotations

import threading
import time

from sqlalchemy.orm import Session

from scheduler.registry import repository as repo


class RoundCache:
    def __init__(self, ttl_s: float = 1.0) -> None:
        self._ttl_s = ttl_s
        self._value = 0
        self._read_at = -float("inf")
        self._lock = threading.Lock()

    def set(self, number: int) -> None:
        """Called by an in-process loop after each round."""
        with self._lock:
            self._value, self._read_at = max(self._value, number), time.monotonic()

    def get(self, session: Session) -> int:
        if time.monotonic() - self._read_at < self._ttl_s:
            return self._value
        number = repo.current_round_number(session)
        self.set(number)
        return number
