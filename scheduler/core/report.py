"""One agent report: the metrics of one sub-window of a job (DESIGN §5.1, the report body).

Plain frozen data, no validation of ranges: the API rejects bad bodies before building these.
Optional values are ``None`` (or an empty tuple) when the agent did not send them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from scheduler.core.juice import Edge

EdgeReport = Edge
"""Per-operator counts for the general juice form (eq. 2.5); the same type as
:class:`scheduler.core.juice.Edge`."""


@dataclass(frozen=True)
class SourceReport:
    """One streaming source in the sub-window.

    ``arrived_rows``: rows that arrived at the source in the sub-window (from its latest offset).
    ``processed_rows``: rows read from this source by batches that finished in the sub-window.
    ``backlog_rows``: rows waiting at the source (latest offset minus the offset read so far) at
    the end of the sub-window.
    """

    name: str
    arrived_rows: float | None
    processed_rows: float
    backlog_rows: float | None = None


@dataclass(frozen=True)
class BatchReport:
    """One micro-batch that finished in the sub-window.

    ``backlog_at_start``: rows waiting at the sources when the batch started that the batch did
    not take (e.g. held back by ``maxOffsetsPerTrigger``); adds queueing time to its latency.
    ``previous_start``: start of the batch before this one, when the agent knows it; otherwise the
    latency estimator uses the previous batch in the sequence it is given (DESIGN §2 "Latency").
    """

    start: datetime
    end: datetime
    rows: float
    backlog_at_start: float | None = None
    previous_start: datetime | None = None

    @property
    def duration_s(self) -> float:
        return (self.end - self.start).total_seconds()


@dataclass(frozen=True)
class LatencyReport:
    """Exact row latencies (ms) measured by the job from per-row timestamps."""

    mean: float
    p95: float | None = None
    p99: float | None = None


@dataclass(frozen=True)
class ExecutorTasks:
    """What one executor's tasks did in the sub-window (from Spark's task-end events)."""

    id: str
    tasks: float
    """Tasks it finished."""
    task_ms: float
    """Their run time, summed."""
    rows: float | None = None
    """Rows its tasks read."""
    host: str | None = None
    """The node it runs on."""
    running: int | None = None
    """Tasks it was running at the window's end."""

    @property
    def mean_task_ms(self) -> float | None:
        return self.task_ms / self.tasks if self.tasks > 0 else None


@dataclass(frozen=True)
class StageTasks:
    """One stage of the job's micro-batches in the sub-window: its runs' figures, averaged."""

    name: str
    tasks: float
    """Tasks per run."""
    median_task_ms: float
    max_task_ms: float
    """The longest task of a run."""
    runs: int = 1
    largest_partition_share: float | None = None
    """The share of the stage's rows its largest partition read (1 / ``tasks`` when even)."""


class TaskWindow(NamedTuple):
    """The task figures of one report window."""

    executors: tuple[ExecutorTasks, ...]
    stages: tuple[StageTasks, ...]


@dataclass(frozen=True)
class Report:
    """One sub-window of one job, as posted by its agent."""

    window_start: datetime
    window_end: datetime
    executors: int
    cores_per_executor: int
    busy_core_ms: float
    max_parallelism: int | None = None
    sources: tuple[SourceReport, ...] = ()
    batches: tuple[BatchReport, ...] = ()
    latency_ms: LatencyReport | None = None
    edges: tuple[Edge, ...] = ()
    executor_tasks: tuple[ExecutorTasks, ...] = ()
    stages: tuple[StageTasks, ...] = ()
    holds_state: bool | None = None
    """Whether the job's queries keep state between batches (their state operators hold rows
    or memory), which a change of executors reloads; ``None`` when not reported."""

    @property
    def duration_s(self) -> float:
        """Length of the sub-window in seconds."""
        return (self.window_end - self.window_start).total_seconds()

    @property
    def duration_ms(self) -> float:
        return self.duration_s * 1000.0

    @property
    def total_cores(self) -> int:
        return self.executors * self.cores_per_executor

    @property
    def processed_rows(self) -> float:
        """Rows completed in the sub-window: summed over sources, else over batches."""
        if self.sources:
            return sum(s.processed_rows for s in self.sources)
        return sum(b.rows for b in self.batches)


def _moment(value: str | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def report_from_document(doc: Mapping[str, Any]) -> Report:
    """The one decoding of a report body (DESIGN §5.1) as the API accepts it and the registry
    stores it; the ingestion and every round read stored reports through it."""
    latency = doc.get("latency_ms") or None
    return Report(
        window_start=_moment(doc["window_start"]),
        window_end=_moment(doc["window_end"]),
        executors=int(doc["executors"]),
        cores_per_executor=int(doc.get("cores_per_executor") or 1),
        busy_core_ms=float(doc["busy_core_ms"]),
        max_parallelism=doc.get("max_parallelism"),
        sources=tuple(
            SourceReport(
                name=s["name"],
                arrived_rows=s.get("arrived_rows"),
                processed_rows=float(s["processed_rows"]),
                backlog_rows=s.get("backlog_rows"),
            )
            for s in doc.get("sources") or ()
        ),
        batches=tuple(
            BatchReport(
                start=_moment(b["start"]),
                end=_moment(b["end"]),
                rows=float(b["rows"]),
                backlog_at_start=b.get("backlog_at_start"),
            )
            for b in doc.get("batches") or ()
        ),
        latency_ms=(
            LatencyReport(mean=latency["mean"], p95=latency.get("p95"), p99=latency.get("p99"))
            if latency and latency.get("mean") is not None
            else None
        ),
        edges=tuple(
            Edge(
                parent=e["parent"],
                child=e["child"],
                sent=float(e["sent"]),
                executed=float(e["executed"]),
            )
            for e in doc.get("edges") or ()
        ),
        executor_tasks=tuple(
            ExecutorTasks(
                id=str(e["id"]),
                tasks=float(e["tasks"]),
                task_ms=float(e["task_ms"]),
                rows=e.get("rows"),
                host=e.get("host"),
                running=e.get("running"),
            )
            for e in doc.get("executor_tasks") or ()
        ),
        stages=tuple(
            StageTasks(
                name=s["name"],
                tasks=float(s["tasks"]),
                median_task_ms=float(s["median_task_ms"]),
                max_task_ms=float(s["max_task_ms"]),
                runs=int(s.get("runs") or 1),
                largest_partition_share=s.get("largest_partition_share"),
            )
            for s in doc.get("stages") or ()
        ),
        holds_state=_holds_state(doc.get("state")),
    )


def _holds_state(state: Mapping[str, Any] | None) -> bool | None:
    figures = [v for v in (state or {}).values() if v is not None]
    return any(v > 0 for v in figures) if figures else None
