"""Prometheus metrics of one service instance (its own registry, so tests can make many)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class ServiceMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reports = Counter(
            "henge_reports_total", "Agent reports by outcome.", ["outcome"], registry=self.registry
        )
        self.rounds = Counter(
            "henge_rounds_total",
            "Scheduling rounds by state and action.",
            ["state", "action"],
            registry=self.registry,
        )
        self.round_seconds = Histogram(
            "henge_round_duration_seconds",
            "Time one round takes.",
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.total_utility = Gauge(
            "henge_total_utility",
            "Sum of the jobs' utilities at the last round.",
            registry=self.registry,
        )
        self.max_utility = Gauge(
            "henge_max_utility",
            "Sum of the jobs' priorities at the last round.",
            registry=self.registry,
        )
        self.job_utility = Gauge(
            "henge_job_utility",
            "Each job's utility at the last round (the highest-priority jobs, up to a bound).",
            ["job_id", "job"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "henge_leader", "1 when this replica runs the rounds.", registry=self.registry
        )

    def record_jobs(self, utilities: list[tuple[str, str, float, float]], limit: int) -> None:
        """``(job id, name, priority, utility)`` of the round's jobs; at most ``limit`` series,
        highest priority first, so the label set stays bounded."""
        self.job_utility.clear()
        for job_id, name, _, value in sorted(utilities, key=lambda u: (-u[2], u[0]))[:limit]:
            self.job_utility.labels(job_id, name).set(value)

    def report_accepted(self, duplicate: bool) -> None:
        self.reports.labels("duplicate" if duplicate else "accepted").inc()

    def report_rejected(self, reason: str) -> None:
        self.reports.labels(f"rejected_{reason}").inc()
