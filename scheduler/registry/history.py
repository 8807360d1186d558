"""Each job's input per minute: report windows rolled up into ``input_hours`` (a row per job and
hour, its 60 minutes packed) and kept for ``history_days``, long after the windows themselves
are purged (DESIGN §8, "History").

A roll-up adds every window received since the last one to the minutes it covers, on the clock
of the job's agent (a window straddling a minute's end is shared out by its seconds), and moves a
mark (``registry_marks``) to the latest receipt time it took. The mark's row is locked for the
roll-up's transaction, so roll-ups never overlap, even from two replicas: the second waits, then
starts from where the first stopped; that is also what lets a roll-up read an hour's row, add to
it and write it back. Windows received in the last ``lag`` are left for the next roll-up, so that
a request still committing its windows is not overtaken.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, tuple_
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from scheduler.registry.tables import InputHour, MetricWindow, RegistryMark

ROLLED_UP = "input_rolled_up"
"""The mark's name: windows received up to its time are in the history."""
ROLL_UP_BATCH = 20_000
"""Windows read by one roll-up at most (a first roll-up over weeks of windows takes several)."""
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
PACKED = struct.Struct("<180f")
"""An hour's minutes: 60 rows arrived, then 60 rows processed, then 60 seconds covered, as
32-bit floats (7 significant digits; 720 bytes)."""
Hour = list[float]
"""An hour's 180 numbers, unpacked."""


def pack(hour: Hour) -> bytes:
    return PACKED.pack(*hour)


def unpack(data: bytes) -> Hour:
    return list(PACKED.unpack(data))


@dataclass(frozen=True)
class MinuteInput:
    """A job's input over one minute: rows per second arrived and processed."""

    minute: datetime
    arrived_rate: float
    processed_rate: float
    seconds: float
    """Seconds of report windows behind the rates (60 when no window was missed)."""


def minute_shares(start: datetime, end: datetime) -> list[tuple[datetime, float]]:
    """The minutes ``[start, end)`` overlaps, each with the seconds of it that fall there."""
    shares = []
    minute = start.replace(second=0, microsecond=0)
    while minute < end:
        following = minute + MINUTE
        seconds = (min(end, following) - max(start, minute)).total_seconds()
        if seconds > 0:
            shares.append((minute, seconds))
        minute = following
    return shares


Totals = dict[tuple[str, datetime], Hour]
"""(job, hour) → the numbers to add to that hour."""


def _add(totals: Totals, window: MetricWindow) -> None:
    arrived = window.input_rate
    if arrived is None:
        return  # the window says nothing of the job's input
    processed = window.processed_rate or 0.0
    for minute, seconds in minute_shares(window.window_start, window.window_end):
        hour = minute.replace(minute=0)
        sums = totals.setdefault((window.job_id, hour), [0.0] * 180)
        k = minute.minute
        sums[k] += arrived * seconds
        sums[60 + k] += processed * seconds
        sums[120 + k] += seconds


def _cut(session: Session, since: datetime | None, until: datetime) -> datetime | None:
    """The receipt time this roll-up goes up to: ``until``, or sooner when more than
    :data:`ROLL_UP_BATCH` windows wait (every window received at that instant included, so that
    none is split between two roll-ups); ``None`` when nothing waits."""
    waiting = select(MetricWindow.received_at).where(MetricWindow.received_at <= until)
    if since is not None:
        waiting = waiting.where(MetricWindow.received_at > since)
    last = session.scalar(
        waiting.order_by(MetricWindow.received_at).offset(ROLL_UP_BATCH - 1).limit(1)
    )
    if last is not None:
        return last
    return session.scalar(select(func.max(waiting.subquery().c.received_at)))


def roll_up(session: Session, until: datetime) -> int:
    """Add the windows received after the mark and by ``until`` to their jobs' minutes; returns
    how many windows were read (at least :data:`ROLL_UP_BATCH` when more may wait). Runs in the
    caller's transaction, which must be committed for the mark to move."""
    mark = session.get(RegistryMark, ROLLED_UP, with_for_update=True)
    since = mark.at if mark is not None else None
    cut = _cut(session, since, until)
    if cut is None:
        return 0
    query = select(MetricWindow).where(MetricWindow.received_at <= cut)
    if since is not None:
        query = query.where(MetricWindow.received_at > since)
    totals: Totals = {}
    read = 0
    for window in session.scalars(query.execution_options(yield_per=2_000)):
        _add(totals, window)
        read += 1
    _store(session, totals)
    if mark is None:
        session.add(RegistryMark(name=ROLLED_UP, at=cut))
    else:
        mark.at = cut
    session.flush()
    return read


def _chunks(keys: list[tuple[str, datetime]], size: int) -> Iterable[list[tuple[str, datetime]]]:
    for start in range(0, len(keys), size):
        yield keys[start : start + size]


def _store(session: Session, totals: Totals) -> None:
    """Add ``totals`` to the hours stored (read, added to, written back: roll-ups never overlap,
    see the module's docstring)."""
    keys = list(totals)
    for chunk in _chunks(keys, 500):
        stored = session.execute(
            select(InputHour.job_id, InputHour.hour, InputHour.minutes).where(
                tuple_(InputHour.job_id, InputHour.hour).in_(chunk)
            )
        )
        for job_id, hour, data in stored:
            added = totals[job_id, hour]
            totals[job_id, hour] = [a + b for a, b in zip(unpack(data), added, strict=True)]
    table = InputHour.__table__
    dialect = session.get_bind().dialect.name
    insert = postgresql_insert(table) if dialect == "postgresql" else sqlite_insert(table)
    statement = insert.on_conflict_do_update(
        index_elements=["job_id", "hour"], set_={"minutes": insert.excluded.minutes}
    )
    for chunk in _chunks(keys, 1_000):
        rows = [{"job_id": j, "hour": h, "minutes": pack(totals[j, h])} for j, h in chunk]
        session.execute(statement, rows)


def input_minutes(
    session: Session,
    job_id: str,
    since: datetime | None,
    until: datetime | None,
    limit: int | None = None,
) -> list[MinuteInput]:
    """The job's minutes starting in ``[since, until)`` (either end open when ``None``) that
    some window covered, oldest first, the newest ``limit`` of them: a range read of the
    table's key, an hour a row."""
    query = select(InputHour.hour, InputHour.minutes).where(InputHour.job_id == job_id)
    if since is not None:
        query = query.where(InputHour.hour > since - HOUR)
    if until is not None:
        query = query.where(InputHour.hour < until)
    found: list[MinuteInput] = []
    for hour, data in session.execute(query.order_by(InputHour.hour)):
        numbers = unpack(data)
        for k in range(60):
            seconds = numbers[120 + k]
            minute = hour + k * MINUTE
            if seconds <= 0 or (since is not None and minute < since):
                continue
            if until is not None and minute >= until:
                break
            found.append(
                MinuteInput(minute, numbers[k] / seconds, numbers[60 + k] / seconds, seconds)
            )
    if limit is not None and limit < len(found):
        return found[len(found) - limit :]
    return found


def purge_input_hours(session: Session, older_than: datetime) -> int:
    """Delete the hours that ended by ``older_than``; returns how many hours."""
    result = session.execute(delete(InputHour).where(InputHour.hour <= older_than - HOUR))
    return int(getattr(result, "rowcount", 0) or 0)
