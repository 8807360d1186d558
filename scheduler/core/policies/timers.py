"""Per-job timers: what a baseline policy remembers between rounds, and its JSON form.

Timers are kept as epoch seconds so that a policy's state round-trips through JSON. A
baseline's state is a frozen dataclass whose fields are either per-job mappings, declared with
:func:`per_job` (of bare epoch seconds or of small frozen records), or optional epoch seconds.
A job that leaves the snapshot loses its timers, unless it is only frozen for the round
(``Snapshot.frozen_jobs``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from scheduler.core.model import Snapshot
from scheduler.core.policy import JSONDict

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

EntryT = TypeVar("EntryT")
StateT = TypeVar("StateT", bound="DataclassInstance")
ValueT = TypeVar("ValueT")

# Field metadata key naming the type of a per-job mapping's values; the JSON form is derived
# from it, so a new state field needs no code of its own to be stored and restored.
_ENTRY = "per_job_entry"


def epoch_s(moment: datetime) -> float:
    """``moment`` as seconds since the epoch (the form timers are stored in)."""
    return moment.timestamp()


def elapsed(now_s: float, since_s: float | None) -> float:
    """Seconds from ``since_s`` to ``now_s``; infinite when ``since_s`` never happened."""
    return math.inf if since_s is None else now_s - since_s


def per_job(entry: type[EntryT]) -> Mapping[str, EntryT]:
    """A state field mapping job ids to ``entry`` values (``float`` or a frozen record)."""
    empty: Callable[[], Mapping[str, EntryT]] = dict
    return dataclasses.field(default_factory=empty, metadata={_ENTRY: entry})


def keep_frozen(
    snapshot: Snapshot, previous: Mapping[str, ValueT], current: dict[str, ValueT]
) -> dict[str, ValueT]:
    """``current`` plus the previous entries of jobs frozen this round (stale reports): they
    are not in the snapshot, but their timers must survive until they report again. Entries of
    any other job missing from the snapshot (deregistered) are dropped."""
    for job_id in snapshot.frozen_jobs:
        if job_id in previous and job_id not in current:
            current[job_id] = previous[job_id]
    return current


def dump_timers(state: DataclassInstance) -> JSONDict:
    """``state`` as a JSON object: one key per field, per-job mappings sorted by job id."""
    data: JSONDict = {}
    for field in dataclasses.fields(state):
        value = getattr(state, field.name)
        if _ENTRY in field.metadata:
            value = {job_id: _dump_entry(entry) for job_id, entry in sorted(value.items())}
        data[field.name] = value
    return data


def load_timers(cls: type[StateT], data: Mapping[str, Any]) -> StateT:
    """The inverse of :func:`dump_timers`. A missing or null field gets its default (no
    timers); unknown keys, in the state or in a record, are ignored."""
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        raw = data.get(field.name)
        if raw is None:
            continue
        entry = field.metadata.get(_ENTRY)
        values[field.name] = float(raw) if entry is None else _load_entries(field.name, entry, raw)
    return cls(**values)


def _dump_entry(entry: Any) -> Any:
    if dataclasses.is_dataclass(entry) and not isinstance(entry, type):
        return dataclasses.asdict(entry)
    return entry


def _load_entries(name: str, entry: type[Any], raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"policy state: {name} must be an object of per-job entries, got {raw!r}")
    return {str(job_id): _load_entry(entry, job_id, value) for job_id, value in raw.items()}


def _load_entry(entry: type[Any], job_id: Any, value: Any) -> Any:
    if not dataclasses.is_dataclass(entry):
        return entry(value)
    if not isinstance(value, Mapping):
        raise ValueError(f"policy state: record of job {job_id!r} is not an object")
    known = {field.name for field in dataclasses.fields(entry)}
    return entry(**{key: item for key, item in value.items() if key in known})
