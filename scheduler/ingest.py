"""From the wire to the core: report documents become core reports, and each accepted window
gets its derived values (utility, juice, latency, capacity, rates) at ingestion."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from scheduler.core.juice import Edge
from scheduler.core.metrics import assess_report
from scheduler.core.report import BatchReport, LatencyReport, Report, SourceReport
from scheduler.core.slo import slo_from_mapping
from scheduler.registry.tables import Job


def _time(value: str | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def report_from_document(doc: Mapping[str, Any]) -> Report:
    """A core :class:`Report` from a report body as the API accepts and the registry stores it."""
    latency = doc.get("latency_ms") or None
    return Report(
        window_start=_time(doc["window_start"]),
        window_end=_time(doc["window_end"]),
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
                start=_time(b["start"]),
                end=_time(b["end"]),
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
    )


def derive_window(job: Job, report: Report, previous: Report | None) -> dict[str, Any]:
    """The derived columns of one metric window; ``previous`` is the job's newest stored window
    (backlog deltas and batch gaps need it)."""
    assessed = assess_report(report, slo_from_mapping(job.slo), job.priority, previous)
    return {
        "utility": assessed.utility,
        "juice": assessed.juice,
        "juice_raw": assessed.juice_raw,
        "latency_ms": assessed.latency_ms,
        "capacity": assessed.capacity,
        "input_rate": assessed.input_rate,
        "processed_rate": assessed.processed_rate,
    }
