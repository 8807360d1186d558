"""From Structured Streaming progress to the numbers of one report window (standard library only).

:class:`ProgressBook` is fed the queries' progress (``StreamingQueryProgress``, a ``dict`` since
Spark 4.0, or the same shape parsed from ``StreamingQueryProgress.json``) and, once per
sub-window, :meth:`ProgressBook.drain` hands back what finished since the last call: the
batches (start, end, rows, backlog left at the source), per-source rows and backlog, and the
state operators' size.

Sources:
- rows read: ``numInputRows`` of each batch that finished in the window;
- backlog: for sources whose offsets count rows (Kafka, and any source whose offsets keep row
  positions under the key ``"rows"``, like the examples' generator), ``latestOffset -
  endOffset`` summed over the partitions; the scheduler then takes arrivals as processed +
  Δbacklog;
- arrivals: for Spark's rate source, ``rowsPerSecond`` × the window (it makes rows at that rate);
- anything else reports rows read only, and counts for latency and capacity but not for juice.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from henge_agent.estimator import Batch

ROW_OFFSET_DESCRIPTIONS = ("KafkaV2", "KafkaSource", "KafkaMicroBatchStream")
ROW_OFFSET_KEY = "rows"
_RATE = re.compile(r"^RateStreamV2\[.*?rowsPerSecond=(\d+(?:\.\d+)?)")
_RATE_RAMP = re.compile(r"rampUpTimeSeconds=(\d+)")
_OBJECT_ID = re.compile(r"@[0-9a-f]{4,}$")
MAX_NAME = 200


def parse_time(value: str) -> float:
    """Epoch seconds of an ISO-8601 time as Spark writes it (``2026-01-01T00:00:00.123Z``)."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _offset(value: Any) -> Any:
    """An offset as JSON data (Spark gives JSON text; ``None``/"null"/"None" when absent)."""
    if value is None or isinstance(value, (dict, list, int, float)):
        return value
    text = str(value).strip()
    if text in ("", "null", "None"):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _leaves(offset: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], float]:
    """Numeric leaves of a JSON offset by their key path."""
    if isinstance(offset, bool):
        return {}
    if isinstance(offset, (int, float)):
        return {path: float(offset)}
    if isinstance(offset, dict):
        out: dict[tuple[str, ...], float] = {}
        for key, value in offset.items():
            out.update(_leaves(value, (*path, str(key))))
        return out
    return {}


def counts_rows(description: str, offset: Any) -> bool:
    """Whether a source's offsets are row positions (so offset differences are rows)."""
    if description.startswith(ROW_OFFSET_DESCRIPTIONS):
        return True
    return any(path and path[-1] == ROW_OFFSET_KEY for path in _leaves(offset))


def row_backlog(description: str, end: Any, latest: Any) -> float | None:
    """Rows available at the source beyond what the batch read, when offsets count rows."""
    end, latest = _offset(end), _offset(latest)
    if end is None or latest is None or not counts_rows(description, latest):
        return None
    ends, latests = _leaves(end), _leaves(latest)
    if not latests:
        return None
    if not description.startswith(ROW_OFFSET_DESCRIPTIONS):
        latests = {p: v for p, v in latests.items() if p and p[-1] == ROW_OFFSET_KEY}
    return max(0.0, sum(v - ends.get(p, 0.0) for p, v in latests.items()))


def rate_rows_per_second(description: str) -> float | None:
    """``rowsPerSecond`` of Spark's rate source (ramp-up ignored), else None."""
    match = _RATE.match(description)
    return float(match.group(1)) if match else None


def source_name(query: str, index: int, description: str) -> str:
    """A stable name for a query's source: the query, its position and its description without
    the object id some sources print (``...PythonMicroBatchStream@1a2b3c``)."""
    clean = _OBJECT_ID.sub("", description.strip())
    clean = clean.rsplit(".", 1)[-1] if clean.startswith("org.apache.") else clean
    return f"{query}/{index}:{clean}"[:MAX_NAME]


@dataclass
class SourceWindow:
    name: str
    processed_rows: float = 0.0
    backlog_rows: float | None = None
    rows_per_second: float | None = None
    """The rate source's configured rate (arrivals = rate × window)."""


@dataclass
class Drained:
    """What finished between two drains."""

    batches: list[Batch] = field(default_factory=list)
    sources: dict[str, SourceWindow] = field(default_factory=dict)
    state_rows: float | None = None
    state_memory_bytes: float | None = None
    run_ids: set[str] = field(default_factory=set)
    events: int = 0


@dataclass
class _Query:
    name: str
    run_id: str = ""
    last_batch_id: int | None = None
    last_start: float | None = None
    state_rows: float = 0.0
    state_memory_bytes: float = 0.0
    sources: dict[int, str] = field(default_factory=dict)
    backlogs: dict[str, float] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)


class ProgressBook:
    """Thread-safe: the listener thread records, the agent thread drains."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queries: dict[str, _Query] = {}
        self._pending = Drained()
        self.active_runs: set[str] = set()

    def started(self, run_id: str) -> None:
        with self._lock:
            self.active_runs.add(run_id)

    def terminated(self, run_id: str) -> None:
        with self._lock:
            self.active_runs.discard(run_id)
            for key in [k for k, q in self._queries.items() if q.run_id == run_id]:
                del self._queries[key]

    def record(self, progress: Mapping[str, Any]) -> None:
        """One ``onQueryProgress`` event."""
        query_id = str(progress.get("id"))
        run_id = str(progress.get("runId"))
        batch_id = progress.get("batchId")
        timestamp = progress.get("timestamp")
        if timestamp is None or batch_id is None:
            return
        start = parse_time(str(timestamp))
        durations = progress.get("durationMs") or {}
        duration_ms = durations.get("triggerExecution", progress.get("batchDuration") or 0)
        end = start + float(duration_ms or 0) / 1000.0
        rows = float(progress.get("numInputRows") or 0)
        with self._lock:
            self.active_runs.add(run_id)
            query = self._queries.get(query_id)
            if query is None:
                label = progress.get("name") or query_id[:8]
                query = self._queries[query_id] = _Query(str(label))
            query.run_id = run_id
            if query.last_batch_id is not None and batch_id == query.last_batch_id:
                return  # the same batch reported again (an idle or repeated event)
            backlog_total: float | None = None
            for index, source in enumerate(progress.get("sources") or ()):
                description = str(source.get("description") or f"source{index}")
                name = query.sources.setdefault(index, source_name(query.name, index, description))
                entry = self._pending.sources.setdefault(name, SourceWindow(name))
                entry.processed_rows += float(source.get("numInputRows") or 0)
                rate = rate_rows_per_second(description)
                if rate is not None:
                    entry.rows_per_second = query.rates[name] = rate
                backlog = row_backlog(
                    description, source.get("endOffset"), source.get("latestOffset")
                )
                if backlog is not None:
                    entry.backlog_rows = backlog
                    query.backlogs[name] = backlog
                    backlog_total = (backlog_total or 0.0) + backlog
            operators = progress.get("stateOperators") or ()
            query.state_rows = float(sum(op.get("numRowsTotal") or 0 for op in operators))
            query.state_memory_bytes = float(
                sum(op.get("memoryUsedBytes") or 0 for op in operators)
            )
            if rows > 0:
                self._pending.batches.append(
                    Batch(start, end, rows, query.last_start, backlog_total)
                )
            query.last_batch_id = batch_id
            query.last_start = start
            self._pending.run_ids.add(run_id)
            self._pending.events += 1

    def drain(self) -> Drained:
        """What finished since the last drain; sources keep their last known backlog."""
        with self._lock:
            drained, self._pending = self._pending, Drained()
            for query in self._queries.values():
                for name, backlog in query.backlogs.items():
                    entry = drained.sources.setdefault(name, SourceWindow(name))
                    if entry.backlog_rows is None:
                        entry.backlog_rows = backlog
                for name, rate in query.rates.items():
                    drained.sources.setdefault(name, SourceWindow(name)).rows_per_second = rate
            if self._queries:
                drained.state_rows = sum(q.state_rows for q in self._queries.values())
                drained.state_memory_bytes = sum(
                    q.state_memory_bytes for q in self._queries.values()
                )
            return drained

    def source_names(self) -> Sequence[str]:
        with self._lock:
            return [n for q in self._queries.values() for n in q.sources.values()]
