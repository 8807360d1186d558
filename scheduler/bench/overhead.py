"""How long one scheduling decision takes: ``decide()`` with the ``henge`` policy on synthetic
clusters of 100 to 10,000 jobs.

The timed round is a demanding one: the state has history and per-job models (built by a few
warm-up rounds), the last reconfiguration is judged, and the next one is chosen and sized. The
call is timed as a round makes it (:func:`scheduler.round.deciding.decide_paused`, the garbage
collector paused), and again with the collector running, for comparison.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler.core.decide import CoreSettings, SchedulerState, decide
from scheduler.core.model import (
    ClusterView,
    JobMetrics,
    JobStatus,
    JobView,
    NodeView,
    Snapshot,
)
from scheduler.core.slo import SLO, utility
from scheduler.round.deciding import decide_paused

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
NODE_CORES = 32
PRIORITIES = (1.0, 2.0, 5.0, 10.0, 35.0)


def _job(rng: random.Random, index: int, taken_at: datetime) -> JobView:
    priority = rng.choice(PRIORITIES)
    executors = rng.randint(1, 16)
    cores = rng.choice((1, 1, 2))
    kind = rng.random()
    slo = (
        SLO(juice=1.0)
        if kind < 0.4
        else SLO(latency_ms=rng.choice((500.0, 1000.0, 5000.0)))
        if kind < 0.8
        else SLO(juice=1.0, latency_ms=2000.0)
    )
    rate = rng.uniform(100.0, 50_000.0)
    capacity = rng.uniform(0.05, 1.0)
    juice = min(1.0, rng.uniform(0.7, 1.3))
    batch_s = rng.uniform(0.2, 4.0)
    latency_ms = batch_s * rng.uniform(1000.0, 2000.0)
    metrics = JobMetrics(
        utility=utility(slo, priority, juice, latency_ms),
        juice=juice,
        juice_raw=juice,
        latency_ms=latency_ms,
        capacity=capacity,
        input_rate=rate,
        processed_rate=rate * juice,
        backlog_rows=0.0,
        max_parallelism=rng.choice((8, 16, 32, 64, 200)),
        busy_core_s=capacity * executors * cores * 60.0,
        mean_batch_s=batch_s,
        trigger_interval_s=batch_s * rng.uniform(1.0, 2.0),
        executors_reported=executors,
        windows=6,
    )
    return JobView(
        job_id=f"job-{index:05d}",
        name=f"job{index}",
        tenant=f"tenant{index % 50}",
        priority=priority,
        slo=slo,
        status=JobStatus.ADMITTED,
        executors=executors,
        min_executors=1,
        max_executors=64,
        cores_per_executor=cores,
        memory_mb=2048,
        registered_at=EPOCH,
        last_report_at=taken_at - timedelta(seconds=rng.uniform(0.0, 9.0)),
        metrics=metrics,
    )


def synthetic_snapshot(n_jobs: int, seed: int, taken_at: datetime = EPOCH) -> Snapshot:
    """A cluster of ``n_jobs`` running jobs with random SLOs and metrics, about 10 % spare cores.

    The same ``n_jobs`` and ``seed`` always give the same snapshot (up to ``taken_at``, which
    only moves the report times along).
    """
    rng = random.Random(seed)
    jobs = tuple(_job(rng, i, taken_at) for i in range(n_jobs))
    used = sum(j.executors * j.cores_per_executor for j in jobs)
    nodes = max(1, round(used * 1.1 / NODE_CORES + 0.5))
    per_node = used / nodes
    cluster = ClusterView(
        tuple(
            NodeView(
                name=f"node-{k:04d}",
                cores=NODE_CORES,
                memory_mb=NODE_CORES * 4096,
                cores_requested=min(float(NODE_CORES), per_node),
                memory_requested_mb=per_node * 2048,
                cpu_used=per_node * rng.uniform(0.3, 1.0),
            )
            for k in range(nodes)
        )
    )
    return Snapshot(round_number=1, jobs=jobs, cluster=cluster, taken_at=taken_at)


def _moved(snapshot: Snapshot, at: datetime, round_number: int) -> Snapshot:
    """``snapshot`` taken ``at`` a later time: every report as recent as in the original."""
    shift = at - snapshot.taken_at
    jobs = tuple(
        replace(j, last_report_at=j.last_report_at + shift if j.last_report_at else None)
        for j in snapshot.jobs
    )
    return replace(snapshot, jobs=jobs, taken_at=at, round_number=round_number)


def _warm_state(snapshot: Snapshot, settings: CoreSettings) -> tuple[Snapshot, SchedulerState]:
    """The state and snapshot of a round that judges an action and takes the next one."""
    state = SchedulerState.initial(settings)
    at = snapshot.taken_at
    for k in range(4):
        moment = at + timedelta(seconds=10 * k)
        _, state = decide(_moved(snapshot, moment, k + 1), state, settings, moment)
    moment = at + timedelta(seconds=70)
    return _moved(snapshot, moment, 8), state


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[rank]


def measure_decide(
    sizes: Sequence[int] = (100, 1000, 10000), repeats: int = 30, seed: int = 1
) -> dict[str, Any]:
    """Milliseconds per ``decide()`` with ``henge``: ``{"decide_ms": {"100": {...}, ...}}``,
    each with the median and p99 of the calls as a round makes them and the median of as many
    calls with the garbage collector running (``median_collecting``)."""
    settings = CoreSettings(policy="henge")
    result: dict[str, dict[str, float]] = {}
    for size in sizes:
        snapshot, state = _warm_state(synthetic_snapshot(size, seed), settings)
        now = snapshot.taken_at
        runs = max(1, repeats)
        paused: list[float] = []
        collecting: list[float] = []
        for _ in range(runs):  # alternately, so that both meet the same machine
            paused.append(_timed(decide_paused, snapshot, state, settings, now))
            collecting.append(_timed(decide, snapshot, state, settings, now))
        result[str(size)] = {
            "median": round(statistics.median(paused), 3),
            "p99": round(_percentile(paused, 0.99), 3),
            "median_collecting": round(statistics.median(collecting), 3),
            "runs": float(runs),
        }
    return {"decide_ms": result}


def _timed(
    call: Callable[[Snapshot, SchedulerState, CoreSettings, datetime], object],
    snapshot: Snapshot,
    state: SchedulerState,
    settings: CoreSettings,
    now: datetime,
) -> float:
    """Milliseconds ``call(snapshot, state, settings, now)`` takes."""
    start = time.perf_counter()
    call(snapshot, state, settings, now)
    return (time.perf_counter() - start) * 1000.0


if __name__ == "__main__":  # pragma: no cover
    print(measure_decide())
