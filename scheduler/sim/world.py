"""The simulated world the runner drives: a cluster and its streaming jobs (``World`` protocol of
:mod:`scheduler.sim.types`).

Time advances in sub-windows from simulated time zero (``start``). Each sub-window, cluster
events and job arrivals due by its start are applied, then every arrived job runs its
micro-batches through the window and makes one report (DESIGN §5.1), unless a collector outage
silences it. Deterministic for a given seed: every job draws its noise from its own
``random.Random`` seeded with the seed and its name, and the variation of its input a scenario
asks for from others (:mod:`scheduler.sim.variation`).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from scheduler.core.model import ClusterView
from scheduler.sim.agent_reports import Clock
from scheduler.sim.cluster import Cluster
from scheduler.sim.events import (
    ClusterChange,
    cluster_changes,
    effective_at,
    outages,
    ready_cores_at,
    silent,
    spikes,
)
from scheduler.sim.inputs import RateSchedule, load_trace, schedule_for
from scheduler.sim.jobs import JobConstants, JobRun, Skew
from scheduler.sim.scenario import JobScenario, Scenario, Spike
from scheduler.sim.types import SimJobSpec
from scheduler.sim.variation import seeded_input

DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
_EPS = 1e-6
DAY_STEPS = 1440
"""Steps (trace minutes, or minutes) in a day of input history."""


class SimWorld:
    """Implements :class:`scheduler.sim.types.World` for one scenario and seed."""

    def __init__(self, scenario: Scenario, seed: int, start: datetime = DEFAULT_START) -> None:
        self.scenario = scenario
        self.seed = seed
        self.start = start
        self._cluster = Cluster(scenario.cluster)
        horizon = scenario.duration_s + 3600.0
        events = scenario.events
        self._models = {j.name: JobConstants(j) for j in scenario.jobs}
        self._schedules: dict[str, RateSchedule] = {
            j.name: self._schedule(j, spikes(events), horizon) for j in scenario.jobs
        }
        self._arrivals: list[JobScenario] = sorted(scenario.jobs, key=lambda j: j.arrives_at_s)
        self._changes: list[ClusterChange] = cluster_changes(events, scenario.cluster)
        self._outages = outages(events)
        self._runs: dict[str, JobRun] = {}
        self._targets: dict[str, int] = {}
        self._down: dict[str, int] = {}
        self._skews: dict[str, Skew] = {}
        self._skew_timeline = self._skews_over_time()
        self._window = 0
        self._now = 0.0
        self._clock = Clock(start)
        self._view: tuple[tuple[int, int, float], ClusterView] | None = None
        self._apply_until(0.0)

    # ---- World ----------------------------------------------------------------------------

    def specs(self) -> Sequence[SimJobSpec]:
        return self.scenario.specs()

    def advance(self, now: datetime) -> Sequence[tuple[str, Mapping[str, Any]]]:
        t = self._seconds(now)
        sub = self.scenario.sub_window_s
        reports: list[tuple[str, Mapping[str, Any]]] = []
        while (self._window + 1) * sub <= t + _EPS:
            w0 = self._window * sub
            w1 = w0 + sub
            self._apply_until(w0)
            version = self._cluster.version
            for name, run in self._runs.items():
                report = run.run_window(w0, w1, version)
                if not (self._outages and silent(self._outages, name, w0, w1)):
                    reports.append((name, report))
            self._window += 1
        self._now = max(self._now, t)
        self._apply_until(self._now)
        return reports

    def set_target(self, job: str, executors: int) -> None:
        if job not in self._models:
            raise KeyError(f"unknown job {job!r}")
        self._targets[job] = executors
        if job in self._runs:
            self._cluster.set_count(self._runs[job].pool, executors, self._now)

    def replace_executors(self, job: str, executor_ids: Sequence[str]) -> list[str]:
        """Kill the named executors of ``job``; a new one starts for each (the ids replaced)."""
        if job not in self._runs:
            return []
        return self._cluster.replace(self._runs[job].pool, executor_ids, self._now)

    def cluster(self) -> ClusterView:
        key = (self._cluster.version, self._window, self._now)
        if self._view is None or self._view[0] != key:
            busy = {name: run.last_capacity for name, run in self._runs.items()}
            self._view = (key, self._cluster.view(busy, self._now))
        return self._view[1]

    def true_utility(self, job: str, executors: int, now: datetime) -> float:
        """On healthy executors, with the skew of ``job``'s data at ``now`` (no scheduler
        removes a hot key)."""
        skew = self._skew_at(job, self._seconds(now))
        return self._models[job].true_utility(self.true_rate(job, now), executors, skew)

    def true_rate(self, job: str, now: datetime) -> float:
        return self._schedules[job].rate(self._seconds(now))

    def capacity_cores(self, now: datetime) -> float:
        return ready_cores_at(self.scenario.cluster, self.scenario.events, self._seconds(now))

    def input_history(self, job: str, days: float, now: datetime) -> tuple[float, list[float]]:
        """``(step_s, rates)``: the job's input per step (a trace minute, or a minute) from
        ``days`` before the start to the last whole step before ``now``. Before the start it is
        the trace's earlier minutes (a trace-less input's first rate), without the seed's
        bursts; since, the rows that arrived (spikes and bursts in)."""
        spec = self.scenario.job(job)
        trace = seeded_input(spec.input, job, self.seed, self.scenario.duration_s).spec.trace
        step = trace.compression if trace is not None else 60.0
        before = round(days * DAY_STEPS)
        schedule = self._schedules[job]
        if trace is not None:
            events, per_event = load_trace(trace.file), trace.scale / 60.0
            first = trace.start_minute - before
            rates = [events[(first + i) % len(events)] * per_event for i in range(before)]
        else:
            rates = [schedule.rate(0.0)] * before
        steps = math.floor(self._seconds(now) / step + _EPS)
        arrived = [schedule.arrived(i * step) for i in range(steps + 1)]
        rates += [(b - a) / step for a, b in itertools.pairwise(arrived)]
        return step, rates

    # ---- inside -----------------------------------------------------------------------------

    def _seconds(self, now: datetime) -> float:
        return (now - self.start).total_seconds()

    def _due(self, at_s: float) -> float:
        return effective_at(at_s, self.scenario.sub_window_s)

    def _skews_over_time(self) -> dict[str, list[tuple[float, Skew]]]:
        """Per job with skew events: from when (seconds) each of its skews holds."""
        timeline: dict[str, list[tuple[float, Skew]]] = {}
        for change in self._changes:
            for job, stage, factor in change.skew:
                steps = timeline.setdefault(job, [])
                last = steps[-1][1] if steps else ()
                steps.append(
                    (self._due(change.at_s), _with_skew(last, self._models[job], stage, factor))
                )
        return timeline

    def _skew_at(self, job: str, t: float) -> Skew:
        skew: Skew = ()
        for at, held in self._skew_timeline.get(job, ()):
            if at > t + _EPS:
                break
            skew = held
        return skew

    def _schedule(self, job: JobScenario, spikes: list[Spike], horizon: float) -> RateSchedule:
        """The job's input for this seed: its own variation (trace offset, bursts) drawn, then
        the scenario's spikes and the bursts multiplied in."""
        seeded = seeded_input(job.input, job.name, self.seed, self.scenario.duration_s)
        return schedule_for(seeded.spec, job.name, [*spikes, *seeded.bursts], horizon)

    def _apply_until(self, t: float) -> None:
        while self._changes and self._due(self._changes[0].at_s) <= t + _EPS:
            self._apply(self._changes.pop(0), t)
        while self._arrivals and self._due(self._arrivals[0].arrives_at_s) <= t + _EPS:
            self._arrive(self._arrivals.pop(0))

    def _apply(self, change: ClusterChange, t: float) -> None:
        cluster = self._cluster
        for name in change.fail:
            self._down[name] = self._down.get(name, 0) + 1
        if change.fail:
            cluster.fail_nodes(change.fail, t)
        back = []
        for name in change.restore:
            self._down[name] -= 1
            if self._down[name] == 0:
                back.append(name)
        if back:
            cluster.restore_nodes(back, t)
        for name, factor in change.slowdown:
            cluster.set_slowdown([name], factor)
        for job, factor in change.slow_executor:
            if job in self._runs:
                cluster.slow_executor(self._runs[job].pool, factor, t)
        for job, stage, factor in change.skew:
            self._skews[job] = _with_skew(
                self._skews.get(job, ()), self._models[job], stage, factor
            )
            if job in self._runs:
                self._runs[job].skew = self._skews[job]

    def _arrive(self, job: JobScenario) -> None:
        at = self._due(job.arrives_at_s)
        ex = job.executors
        pool = self._cluster.pool(job.name, ex.cores, ex.memory_mb)
        rng = random.Random(f"{self.seed}:{job.name}")
        model, schedule = self._models[job.name], self._schedules[job.name]
        run = JobRun(model, schedule, pool, rng, at, self._clock)
        run.skew = self._skews.get(job.name, ())
        run.task_figures = self.scenario.task_figures
        self._runs[job.name] = run
        if job.name in self._targets:
            self._cluster.set_count(pool, self._targets[job.name], at)


def _with_skew(skew: Skew, model: JobConstants, stage: str, factor: float) -> Skew:
    index = model.stage_names.index(stage)
    kept = tuple((i, k) for i, k in skew if i != index)
    return tuple(sorted((*kept, (index, factor)))) if factor != 1.0 else kept


def build_world(scenario: Scenario, seed: int, start: datetime = DEFAULT_START) -> SimWorld:
    """The world of ``scenario`` for ``seed``: same scenario and seed, same reports."""
    return SimWorld(scenario, seed, start)
