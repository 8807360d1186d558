"""Values derived from one report at ingestion: what history and the job list show."""

from __future__ import annotations

from typing import Any

from scheduler.api.schemas import ReportIn
from scheduler.registry.tables import Job


def derive_window(job: Job, report: ReportIn) -> dict[str, Any]:
    """Utility, juice, latency, capacity and rates of one window (filled in by the core)."""
    return {}
