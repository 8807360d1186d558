"""Which admitted jobs a round may count (DESIGN §3 step 1, "Freshness").

A job whose last report is older than ``stale_after`` is *stale*; a job without metrics (it has
not reported yet) is *warming up*. Both are frozen: not touched, not counted. A job with
metrics but no report time is taken as fresh.
Only stale jobs count towards a collector outage (more than ``outage_fraction`` of the
admitted jobs stale).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler.core.model import JobStatus, JobView


@dataclass(frozen=True)
class Freshness:
    """The admitted jobs of one round, split by how current their metrics are."""

    counted: tuple[JobView, ...]
    """Fresh jobs with metrics: the only ones decisions look at."""
    stale: tuple[JobView, ...]
    """Jobs whose last report is older than ``stale_after``."""
    warming: tuple[JobView, ...]
    """Jobs that have not reported yet (no metrics)."""

    @property
    def frozen(self) -> tuple[JobView, ...]:
        return self.stale + self.warming

    @property
    def admitted(self) -> int:
        return len(self.counted) + len(self.stale) + len(self.warming)

    def outage(self, outage_fraction: float) -> bool:
        """More than ``outage_fraction`` of the admitted jobs are stale."""
        return self.admitted > 0 and len(self.stale) > outage_fraction * self.admitted


def classify(jobs: Sequence[JobView], now: datetime, stale_after_s: float) -> Freshness:
    """Split the admitted jobs of ``jobs`` (others are ignored), keeping their order."""
    limit = now - timedelta(seconds=stale_after_s)
    counted: list[JobView] = []
    stale: list[JobView] = []
    warming: list[JobView] = []
    for job in jobs:
        if job.status is not JobStatus.ADMITTED:
            continue
        if job.last_report_at is not None and job.last_report_at < limit:
            stale.append(job)
        elif job.metrics is None:
            warming.append(job)
        else:
            counted.append(job)
    return Freshness(tuple(counted), tuple(stale), tuple(warming))
