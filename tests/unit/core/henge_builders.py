"""Small builders for the state-machine and decide() tests."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.core.model import (
    BatchFit,
    ClusterView,
    JobMetrics,
    JobStatus,
    JobView,
    NodeView,
    Plan,
    Snapshot,
)
from scheduler.core.policies.henge import PRODUCT_SWITCHES, HengePolicy, HengeSettings, HengeState
from scheduler.core.slo import SLO, utility

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def job(
    job_id: str,
    *,
    priority: float = 10.0,
    utility: float | None = None,
    executors: int = 4,
    min_executors: int = 1,
    max_executors: int = 40,
    cores: int = 1,
    memory_mb: int = 1024,
    capacity: float | None = 0.5,
    input_rate: float | None = 1000.0,
    max_parallelism: int | None = None,
    slo: SLO | None = None,
    status: JobStatus = JobStatus.ADMITTED,
    reported_at: datetime | None = T0,
    with_metrics: bool = True,
    initial_executors: int | None = None,
    registered_at: datetime = T0 - timedelta(hours=1),
    **metrics: Any,
) -> JobView:
    """A job; ``utility`` defaults to its priority (meeting its SLO)."""
    value = priority if utility is None else utility
    return JobView(
        job_id=job_id,
        name=job_id,
        tenant="t",
        priority=priority,
        slo=slo or SLO(juice=1.0),
        status=status,
        executors=executors,
        min_executors=min_executors,
        max_executors=max_executors,
        cores_per_executor=cores,
        memory_mb=memory_mb,
        registered_at=registered_at,
        last_report_at=reported_at,
        metrics=JobMetrics(
            utility=value,
            capacity=capacity,
            input_rate=input_rate,
            max_parallelism=max_parallelism,
            **metrics,
        )
        if with_metrics
        else None,
        initial_executors=initial_executors,
    )


def cluster(free: float = 100.0, nodes: int = 4, cores: float = 64.0) -> ClusterView:
    """``nodes`` nodes of ``cores`` cores with ``free`` cores left in total, spread evenly."""
    per_node_free = min(cores, free / nodes)
    return ClusterView(
        tuple(
            NodeView(
                name=f"n{k}",
                cores=cores,
                memory_mb=1 << 20,
                cores_requested=cores - per_node_free,
            )
            for k in range(nodes)
        )
    )


def snapshot(
    jobs: Iterable[JobView], *, free: float = 100.0, when: datetime = T0, **cluster_args: Any
) -> Snapshot:
    return Snapshot(
        round_number=1,
        jobs=tuple(jobs),
        cluster=cluster(free, **cluster_args),
        taken_at=when,
    )


def paper(**overrides: Any) -> HengePolicy:
    return HengePolicy("henge-paper", HengeSettings(**overrides))


def product(**overrides: Any) -> HengePolicy:
    return HengePolicy("henge", HengeSettings(**{**PRODUCT_SWITCHES, **overrides}))


def with_utility(jobs: Iterable[JobView], **utilities: float) -> list[JobView]:
    """``jobs`` with the utilities of the named ones replaced."""
    out = []
    for view in jobs:
        if view.job_id in utilities:
            assert view.metrics is not None
            metrics = replace(view.metrics, utility=utilities[view.job_id])
            out.append(replace(view, metrics=metrics))
        else:
            out.append(view)
    return out


def apply(jobs: Iterable[JobView], plan: Plan) -> list[JobView]:
    """``jobs`` with the plan's changes in force."""
    targets = {c.job_id: c.to_executors for c in plan.changes}
    return [replace(j, executors=targets.get(j.job_id, j.executors)) for j in jobs]


def run(
    policy: HengePolicy, snap: Snapshot, state: HengeState | None, now: datetime
) -> tuple[Plan, HengeState]:
    return policy.decide(snap, state if state is not None else policy.initial_state(), now)


COST = 0.002  # busy core-seconds per row: 500 rows per busy core-second
OVERHEAD = 0.5  # seconds per batch


def spark_metrics(
    slo: SLO,
    priority: float,
    executors: int,
    rate: float,
    *,
    cost: float = COST,
    overhead: float = OVERHEAD,
    trigger: float | None = None,
    batch_rows_cap: float = 10_000.0,
) -> JobMetrics:
    """What a Structured Streaming job that follows the model would report."""
    cores = float(executors)
    rho = rate * cost / cores
    if rho >= 1:  # falling behind: batches take what they can, back to back
        duration = overhead + batch_rows_cap * cost / cores
        interval = duration
        processed = batch_rows_cap / duration
        latency = math.inf
    else:
        back_to_back = overhead / (1 - rho)
        if trigger is not None and trigger >= back_to_back:
            duration, interval = overhead + rho * trigger, trigger
        else:
            duration = interval = back_to_back
        processed = rate
        latency = (duration + interval / 2) * 1000
    juice = min(1.0, processed / rate)
    busy = processed * cost
    return JobMetrics(
        utility=utility(slo, priority, juice, latency if math.isfinite(latency) else 1e9),
        juice=juice,
        latency_ms=latency if math.isfinite(latency) else 1e9,
        capacity=busy / cores,
        input_rate=rate,
        processed_rate=processed,
        mean_batch_s=duration,
        trigger_interval_s=interval,
        executors_reported=executors,
        windows=6,
        # As fitted from batches of varied sizes (window metrics), whether or not it keeps up.
        batch_fit=BatchFit(overhead, cost / cores),
    )
