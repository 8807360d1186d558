"""A simulated Spark Structured Streaming query: micro-batches on a processing-time trigger.

Each micro-batch, computed in closed form (docs/simulator.md, "The job model"):

- starts at a trigger time ``s`` and takes every row waiting at the source, or the oldest
  ``max_rows_per_batch`` of them (Spark's ``maxOffsetsPerTrigger``); a trigger with no new rows
  runs no batch;
- lasts ``reload + compute + overhead``: ``compute = rows * noise * Σ_i stage_i`` where
  ``stage_i = max(w_i / min(cores, P_i) / speed, w_i / P_i * max(k_i / speed, 1 / slowest))``:
  ``w_i`` is stage i's core-ms per source row, ``P_i`` its partitions, ``k_i`` its skew (its
  largest partition holds ``k_i`` times the mean partition's rows), ``speed`` the executors'
  mean 1/slowdown (CPU interference, slow executors), ``slowest`` the slowest executor's, and
  ``noise`` a log-triangular factor of mean 1. The first term is the stage's work shared out
  over its cores; the second is its longest task, which no number of cores shortens (it is
  never the larger on healthy executors without skew). ``reload`` is the state reload of a
  stateful job whose running executors changed;
- keeps its executors busy for ``rows * Σ_i w_i / speed * noise`` core-ms during ``compute``;
- the next batch starts at the next trigger point after ``s``, or at the end of this batch
  when it ran past that point (falling behind).

A batch's rows arrived (uniformly, between their first and last arrival times, taken from the
input's running integral) before ``s``; their latency is the batch's end minus their arrival.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from typing import Any

from scheduler.core.slo import LatencyStat, slo_from_mapping, utility
from scheduler.sim.agent_reports import (
    SOURCE,
    Clock,
    SimulatedBatch,
    batch_documents,
    busy_in,
    latency_summary,
)
from scheduler.sim.cluster import NEVER, Pool
from scheduler.sim.inputs import RateSchedule
from scheduler.sim.scenario import JobScenario
from scheduler.sim.scenario_jobs import row_weights


def _triangular_mean(scale: float) -> float:
    """E[exp(scale·(U1 + U2 − 1))] for independent uniforms U1, U2 on [0, 1)."""
    if scale == 0:
        return 1.0
    return (math.sinh(scale / 2) / (scale / 2)) ** 2


Skew = tuple[tuple[int, float], ...]
"""(stage index, factor) for the stages whose largest partition holds ``factor`` times the mean
partition's rows; empty: no skew."""

MIB = 1024 * 1024

_STAT_SHARE = {LatencyStat.MEAN: 0.5, LatencyStat.P95: 0.95, LatencyStat.P99: 0.99}


class JobConstants:
    """What does not change while the job runs: its plan, trigger, overhead and state."""

    def __init__(self, job: JobScenario) -> None:
        self.name = job.name
        self.priority = job.priority
        self.slo = slo_from_mapping(job.slo)
        self.trigger_s = job.trigger_interval_s
        self.overhead_s = job.batch_overhead_ms / 1000.0
        self.reload_s = job.state.reload_s if job.state is not None else 0.0
        self.state_mb = job.state.size_mb if job.state is not None else 0.0
        self.max_rows = job.max_rows_per_batch
        self.noise = job.noise
        self.noise_scale = job.noise * math.sqrt(6.0)
        """The log of the noise factor is triangular on ±noise·√6: mean 0, deviation noise."""
        self.noise_mu = -math.log(_triangular_mean(self.noise_scale))
        """Shift that makes the noise factor's mean 1."""
        self.cores_per_executor = job.executors.cores
        self.max_parallelism = job.max_parallelism
        self._stages = [
            (w, s.partitions) for w, s in zip(row_weights(job.stages), job.stages, strict=True)
        ]
        self.stage_names = tuple(s.name for s in job.stages)
        self.stage_partitions = tuple(self._stages)
        self.work_ms_per_row = sum(w for w, _ in self._stages)
        self._seconds_per_row: dict[int, float] = {}
        self._uneven: dict[tuple[int, float, float, Skew], float] = {}

    def seconds_per_row(self, cores: int) -> float:
        """Wall seconds per source row on ``cores`` cores (no interference, no noise)."""
        cached = self._seconds_per_row.get(cores)
        if cached is None:
            cached = sum(w / min(cores, p) for w, p in self._stages) / 1000.0 if cores else NEVER
            self._seconds_per_row[cores] = cached
        return cached

    def compute_s(
        self, work_rows: float, cores: int, speed: float, slowest: float, skew: Skew
    ) -> float:
        """Wall seconds to compute ``work_rows`` rows on ``cores`` cores whose mean speed is
        ``speed`` and slowest ``slowest``, with the stages' ``skew``."""
        if not skew and slowest >= speed * (1.0 - 1e-9):
            return work_rows / speed * self.seconds_per_row(cores)
        key = (cores, speed, slowest, skew)
        per_row = self._uneven.get(key)
        if per_row is None:
            if len(self._uneven) > 1024:
                self._uneven.clear()
            factors = dict(skew)
            per_row = self._uneven[key] = (
                sum(
                    max(
                        w / min(cores, p) / speed,
                        w / p * max(factors.get(i, 1.0) / speed, 1.0 / slowest),
                    )
                    for i, (w, p) in enumerate(self._stages)
                )
                / 1000.0
                if cores
                else NEVER
            )
        return work_rows * per_row

    def task_figures(
        self, batches: Sequence[SimulatedBatch], skew: Skew, typical_speed: float
    ) -> list[dict[str, Any]]:
        """Per stage over ``batches``: tasks per run, the median and the longest task (ms), and
        the largest partition's share of the stage's rows, as the agent reports them."""
        if not batches:
            return []
        runs = len(batches)
        factors = dict(skew)
        out = []
        for i, (w, p) in enumerate(self._stages):
            k = factors.get(i, 1.0)
            median = longest = 0.0
            for b in batches:
                task = w * b.work_rows / p
                median += task / typical_speed
                longest += task * max(k / typical_speed, 1.0 / b.slowest)
            out.append(
                {
                    "name": self.stage_names[i],
                    "runs": runs,
                    "tasks": p,
                    "median_task_ms": median / runs,
                    "max_task_ms": longest / runs,
                    "largest_partition_share": min(1.0, k / p),
                }
            )
        return out

    def next_trigger(self, start: float, end: float) -> float:
        """Next batch start: the trigger point after ``start``, or ``end`` if later."""
        point = (math.floor(start / self.trigger_s + 1e-9) + 1) * self.trigger_s
        return end if end >= point else point

    def steady_latency_ms(
        self, rate: float, executors: int, skew: Skew = ()
    ) -> tuple[float, float] | None:
        """(juice, latency in ms by the SLO's statistic) in steady state on healthy executors
        with the stages' ``skew``, or ``None`` with no input. Falling behind: juice =
        throughput / rate and an unbounded latency."""
        if rate <= 0:
            return None
        load = rate * self.compute_s(1.0, executors * self.cores_per_executor, 1.0, 1.0, skew)
        if load >= 1.0:
            return 1.0 / load, math.inf
        on_time = self.overhead_s + load * self.trigger_s
        if on_time <= self.trigger_s:
            duration, interval = on_time, self.trigger_s
        else:
            duration = self.overhead_s / (1.0 - load)
            interval = duration
        return 1.0, (duration + _STAT_SHARE[self.slo.latency_stat] * interval) * 1000.0

    def true_utility(self, rate: float, executors: int, skew: Skew = ()) -> float:
        steady = self.steady_latency_ms(rate, executors, skew)
        if steady is None:
            floor = (self.overhead_s + self.trigger_s / 2) * 1000.0
            return utility(self.slo, self.priority, 1.0, floor)
        return utility(self.slo, self.priority, *steady)


class JobRun:
    """The running query: its source offsets, the batch in flight, and the reports it makes."""

    def __init__(
        self,
        model: JobConstants,
        schedule: RateSchedule,
        pool: Pool,
        rng: random.Random,
        started_s: float,
        clock: Clock,
    ) -> None:
        self.model = model
        self.schedule = schedule
        self.pool = pool
        self.rng = rng
        self.clock = clock
        self.taken = schedule.arrived(started_s)
        """Rows read by the batches started so far (the source's committed offset)."""
        self.offset_time = started_s
        """When the newest row read so far arrived."""
        self.next_start = started_s
        self.current: SimulatedBatch | None = None
        self.cores_at_last_batch: int | None = None
        self.last_capacity = 0.0
        self._segment = schedule.segment(started_s)
        self._running: tuple[int, int, float, float, float] = (-1, 0, 1.0, 1.0, -1.0)
        """(cluster version, count, mean speed, slowest speed, valid until) of the running
        executors."""
        self.task_figures = False
        """Report per-executor and per-stage task figures."""
        self.skew: Skew = ()
        """The stages' skew now (events change it; a batch keeps the skew it started with)."""
        self._arrived_mark = self.taken
        """Rows arrived by the end of the last reported window."""
        self._busy_carry = 0.0
        """Busy core-ms of this window from compute spans replaced by a re-plan."""

    def run_window(self, w0: float, w1: float, version: int) -> dict[str, Any]:
        """Run the query through ``[w0, w1)`` and return the window's report document."""
        done: list[SimulatedBatch] = []
        trigger = self.model.trigger_s
        current, next_start = self.current, self.next_start
        if current is not None:
            current = self._follow_executors(current, max(w0, current.start), w0, w1, version)
        while True:
            if current is not None:
                if current.end > w1:
                    break
                done.append(current)
                # the next trigger point after the start, or the end when it ran past it
                point = (math.floor(current.start / trigger + 1e-9) + 1) * trigger
                next_start = current.end if current.end >= point else point
                current = None
            if next_start >= w1:
                break
            current, next_start = self._start_batch(next_start, w1, version)
        self.current, self.next_start = current, next_start
        return self._report(w0, w1, done, version)

    def _follow_executors(
        self, batch: SimulatedBatch, t: float, w0: float, w1: float, version: int
    ) -> SimulatedBatch:
        """Re-plan the batch's compute span whenever its running executors change between ``t``
        and the window's end (joining executors take pending tasks; leaving ones' tasks are
        redone by the others)."""
        while t < batch.compute_end and t < w1:
            count, speed, slowest, until = self._executors(t, version)
            if count > 0 and (
                count != batch.executors or speed != batch.speed or slowest != batch.slowest
            ):
                batch = self._replan(batch, t, w0, count, speed, slowest)
            t = until
        return batch

    def _replan(
        self,
        b: SimulatedBatch,
        t: float,
        w0: float,
        count: int,
        speed: float,
        slowest: float,
    ) -> SimulatedBatch:
        model = self.model
        work_rows = b.work_rows
        start = b.compute_start
        if t > start:  # part of the work is done: keep its busy time, re-plan the rest
            span = b.compute_end - start
            self._busy_carry += b.busy_core_ms * (t - max(w0, start)) / span
            work_rows *= (b.compute_end - t) / span
            start = t
        cores = count * model.cores_per_executor
        compute = model.compute_s(work_rows, cores, speed, slowest, self.skew)
        return b._replace(
            end=start + compute + model.overhead_s,
            busy_core_ms=work_rows / speed * model.work_ms_per_row,
            compute_start=start,
            compute_end=start + compute,
            work_rows=work_rows,
            executors=count,
            speed=speed,
            slowest=slowest,
        )

    def _executors(self, t: float, version: int) -> tuple[int, float, float, float]:
        seen, count, speed, slowest, until = self._running
        if seen != version or t >= until:
            count, speed, slowest, until = self.pool.running(t)
            self._running = (version, count, speed, slowest, until)
        return count, speed, slowest, until

    def _arrived(self, t: float) -> float:
        start, end, rate, cumulative = self._segment
        if not start <= t < end:
            self._segment = start, end, rate, cumulative = self.schedule.segment(t)
        return cumulative + rate * (t - start)

    def _start_batch(
        self, s: float, w1: float, version: int
    ) -> tuple[SimulatedBatch | None, float]:
        """The batch the trigger at ``s`` starts (``None`` if none can), and the next trigger
        time to try when there is no batch."""
        model = self.model
        count, speed, slowest, until = self._executors(s, version)
        if count == 0:  # no executor to run tasks: the trigger waits for one
            return None, (until if until < w1 else w1)
        available = self._arrived(s) - self.taken
        if available <= 1e-9:
            return None, model.next_trigger(s, s)
        rows = available
        last_arrival = s
        if model.max_rows and available > model.max_rows:
            rows = model.max_rows
            last_arrival = min(s, self.schedule.time_of(self.taken + rows))
        elif self._segment[2] <= 0:  # nothing arrives now: the newest row came earlier
            last_arrival = min(s, self.schedule.time_of(self.taken + rows))
        reload = 0.0
        last = self.cores_at_last_batch
        if model.reload_s and last is not None and last != count:
            reload = model.reload_s
        random = self.rng.random
        work_rows = rows * math.exp(model.noise_mu + model.noise_scale * (random() + random() - 1))
        cores = count * model.cores_per_executor
        compute = model.compute_s(work_rows, cores, speed, slowest, self.skew)
        begin = s + reload
        batch = SimulatedBatch(
            s,
            begin + compute + model.overhead_s,
            rows,
            self.offset_time,
            last_arrival,
            available - rows,
            work_rows / speed * model.work_ms_per_row,
            begin,
            begin + compute,
            work_rows,
            count,
            speed,
            slowest,
        )
        self.taken += rows
        self.offset_time = last_arrival
        self.cores_at_last_batch = count
        if until < batch.compute_end:
            batch = self._follow_executors(batch, until, s, w1, version)
        return batch, s

    def _report(
        self, w0: float, w1: float, done: list[SimulatedBatch], version: int
    ) -> dict[str, Any]:
        model = self.model
        running = self._executors(w1, version)[0]
        busy = self._busy_carry + busy_in(
            [*done, self.current] if self.current is not None else done, w0, w1
        )
        self._busy_carry = 0.0
        cores = running * model.cores_per_executor
        self.last_capacity = busy / ((w1 - w0) * 1000.0 * cores) if cores else 0.0
        arrived_now = self._arrived(w1)
        arrived_before, self._arrived_mark = self._arrived_mark, arrived_now
        processed, latency = latency_summary(done)
        clock = self.clock
        return {
            "window_start": clock.shared(w0),
            "window_end": clock.shared(w1),
            "executors": running,
            "cores_per_executor": model.cores_per_executor,
            "busy_core_ms": busy,
            "max_parallelism": model.max_parallelism,
            "sources": [
                {
                    "name": SOURCE,
                    "arrived_rows": arrived_now - arrived_before,
                    "processed_rows": processed,
                    "backlog_rows": max(0.0, arrived_now - self.taken),
                }
            ],
            "batches": batch_documents(done, clock),
            "latency_ms": latency,
            "state": {"memory_bytes": model.state_mb * MIB},
            **(self._task_documents(done, w1) if self.task_figures else {}),
        }

    def _task_documents(self, done: list[SimulatedBatch], t: float) -> dict[str, Any]:
        """Per executor running at ``t`` and per stage, what the window's batches did. Tasks
        go to executors as they free up, so each takes tasks in proportion to its speed and
        all are busy alike; a slow one shows as fewer, longer tasks."""
        executors = self.pool.running_executors(t)
        if not done or not executors:
            return {}
        model = self.model
        speeds = [e.speed for e in executors]
        total_speed = math.fsum(speeds)
        runs_tasks = len(done) * sum(p for _, p in model.stage_partitions)
        work_ms = math.fsum(b.work_rows for b in done) * model.work_ms_per_row
        rows = math.fsum(b.rows for b in done)
        typical = statistics.median(speeds)
        return {
            "executor_tasks": [
                {
                    "id": e.id,
                    "host": e.node.name if e.node is not None else None,
                    "tasks": runs_tasks * speed / total_speed,
                    "task_ms": work_ms / total_speed,
                    "rows": rows * speed / total_speed,
                }
                for e, speed in zip(executors, speeds, strict=True)
            ],
            "stages": model.task_figures(done, self.skew, typical),
        }
