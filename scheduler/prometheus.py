"""Prometheus metrics of one service (its own registry, so tests can make many).

With several server processes (``henge serve --workers N``) every process counts in files of
one shared directory (prometheus-client's multiprocess mode) and ``/metrics``, whichever
process answers it, adds them up. Only the first process runs rounds: the round's gauges are 0
in the others, so their sum is its value, and the per-job utilities it writes to a file of the
directory that every process reads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, values
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

JOB_UTILITY_FILE = "job_utility.json"
"""Name, in the shared directory, of the file with the per-job utilities of the last round."""


def share_metrics_directory(directory: Path) -> None:
    """Make the metrics this process creates from now on live in ``directory``, shared with the
    service's other processes. prometheus-client's multiprocess mode is configured by an
    environment variable, which its value files read."""
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    values.ValueClass = values.MultiProcessValue()


class ServiceMetrics:
    def __init__(self, shared_directory: Path | None = None) -> None:
        self.registry = CollectorRegistry()
        self.shared_directory = shared_directory
        # Shared: metrics count in the directory's files, and the registry reads all of them.
        own = None if shared_directory is not None else self.registry
        if shared_directory is not None:
            MultiProcessCollector(self.registry, path=str(shared_directory))
        self.reports = Counter(
            "henge_reports_total", "Agent reports by outcome.", ["outcome"], registry=own
        )
        self.rounds = Counter(
            "henge_rounds_total",
            "Scheduling rounds by state and action.",
            ["state", "action"],
            registry=own,
        )
        self.round_seconds = Histogram(
            "henge_round_duration_seconds",
            "Time one round takes.",
            registry=own,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.total_utility = Gauge(
            "henge_total_utility",
            "Sum of the jobs' utilities at the last round.",
            registry=own,
            multiprocess_mode="livesum",
        )
        self.max_utility = Gauge(
            "henge_max_utility",
            "Sum of the jobs' priorities at the last round.",
            registry=own,
            multiprocess_mode="livesum",
        )
        self.leader = Gauge(
            "henge_leader",
            "1 when this replica runs the rounds.",
            registry=own,
            multiprocess_mode="livesum",
        )
        self.job_utility = JobUtilities(shared_directory)
        self.registry.register(self.job_utility)

    def record_jobs(self, utilities: list[tuple[str, str, float, float]], limit: int) -> None:
        """``(job id, name, priority, utility)`` of the round's jobs; at most ``limit`` series,
        highest priority first, so the label set stays bounded."""
        ranked = sorted(utilities, key=lambda u: (-u[2], u[0]))[:limit]
        self.job_utility.set([(job_id, name, value) for job_id, name, _, value in ranked])

    def report_accepted(self, duplicate: bool) -> None:
        self.reports.labels("duplicate" if duplicate else "accepted").inc()

    def report_rejected(self, reason: str) -> None:
        self.reports.labels(f"rejected_{reason}").inc()


class JobUtilities(Collector):
    """``henge_job_utility``: each job's utility at the last round, one series a job. Its
    series are replaced whole each round (a removed job's series goes), which the multiprocess
    files cannot do: with a shared directory, the round's process writes them to a file there
    and whichever process is scraped reads it."""

    def __init__(self, shared_directory: Path | None = None) -> None:
        self._file = shared_directory / JOB_UTILITY_FILE if shared_directory else None
        self._rows: list[tuple[str, str, float]] = []

    def set(self, rows: list[tuple[str, str, float]]) -> None:
        """``(job id, name, utility)`` of the jobs exported."""
        self._rows = list(rows)
        if self._file is not None:
            scratch = self._file.with_suffix(f".{os.getpid()}.tmp")
            scratch.write_text(json.dumps(self._rows))
            scratch.replace(self._file)  # readers see the old rows or the new, never a part

    def rows(self) -> list[tuple[str, str, float]]:
        if self._file is None:
            return list(self._rows)
        try:
            return [(str(i), str(n), float(v)) for i, n, v in json.loads(self._file.read_text())]
        except FileNotFoundError:  # no round yet
            return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "henge_job_utility",
            "Each job's utility at the last round (the highest-priority jobs, up to a bound).",
            labels=["job_id", "job"],
        )
        for job_id, name, value in self.rows():
            family.add_metric([job_id, name], value)
        yield family
