"""Query-string time ranges: ``since``, ``until`` and ``limit``; a time without a zone is UTC."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from fastapi import Query


def as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True)
class TimeRange:
    since: datetime | None
    until: datetime | None
    limit: int


def time_range(what: str, since: str, until: str, default_limit: int) -> Callable[..., TimeRange]:
    """A dependency reading ``since``/``until``/``limit`` for a listing of ``what``, described
    in the OpenAPI document with the listing's own words (``since``/``until`` say how a time
    bounds an item)."""

    def read(
        since_at: datetime | None = Query(None, alias="since", description=f"{what} {since}."),
        until_at: datetime | None = Query(None, alias="until", description=f"{what} {until}."),
        limit: int = Query(
            default_limit,
            ge=1,
            le=10_000,
            description=f"At most this many {what.lower()}, the newest.",
        ),
    ) -> TimeRange:
        return TimeRange(as_utc(since_at), as_utc(until_at), limit)

    return read


WINDOWS = time_range("Windows", "ending after this time", "ending at or before this time", 1000)
ROUNDS = time_range(
    "Rounds", "started at or after this time", "started at or before this time", 100
)
MINUTES = time_range(
    "Minutes", "starting at or after this time", "starting before this time", 10_000
)
ACTIONS = time_range(
    "Actions", "in rounds started at or after this time", "in rounds started until this time", 1000
)
