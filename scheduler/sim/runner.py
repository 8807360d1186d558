"""Running a scenario: the production loop on a simulated world with a virtual clock.

Nothing of the scheduler is copied here. The round is :class:`scheduler.round.loop.SchedulerLoop`
with three simulated ports: an in-memory round store, the world as cluster view, and the world's
agents as realizer. Jobs that arrive before the scheduler starts run at their initial size
(the paper's warm-up of 900 s); later arrivals are registered ``queued`` and wait for admission.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from scheduler.cluster.port import Holding
from scheduler.core.decide import CoreSettings
from scheduler.core.model import Change, ClusterView, Replacement
from scheduler.realize.port import Realizer
from scheduler.round.forecasts import ForecastSource
from scheduler.round.loop import LoopSettings, RoundOutcome, SchedulerLoop, action_kind
from scheduler.round.store import JobRecord, RoundStore
from scheduler.sim.memory_round_store import MemoryRoundStore
from scheduler.sim.oracle import OracleTracker
from scheduler.sim.types import (
    ActionEvent,
    EventMark,
    RoundSample,
    SimJobSpec,
    SimResult,
    World,
)

Progress = Callable[[float], None]
"""Called with the fraction of the run done."""

Steering = Callable[[World, Sequence[SimJobSpec], datetime], Mapping[str, int]]
"""Each present job's executors, imposed on the world after every round in place of the
policy's plan (the reference allocations of :mod:`scheduler.sim.reference`)."""

ForecastsFor = Callable[[Mapping[str, str]], ForecastSource]
"""Builds a run's forecast source from its job ids' names in the world."""

RoundHook = Callable[[RoundOutcome, "Simulation"], None]
"""Called after each round with its outcome and the simulation (``henge bench plan`` checks
the policy's models against the world's truth there)."""


@dataclass
class VirtualClock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class WorldCluster:
    """The world as the loop's cluster view: it sees the executors actually placed."""

    world: World
    name: str = "simulated"

    def view(self, holdings: Sequence[Holding]) -> ClusterView:
        return self.world.cluster()


@dataclass
class WorldAgents:
    """The simulated agents as the loop's realizer: each job applies its new target live."""

    world: World
    names: dict[str, str] = field(default_factory=dict)
    name: str = "simulated"

    def apply(self, changes: Sequence[Change]) -> Sequence[Change]:
        for change in changes:
            self.world.set_target(self.names[change.job_id], change.to_executors)
        return changes

    def replace(self, replacements: Sequence[Replacement]) -> Sequence[Replacement]:
        return [
            r
            for r in replacements
            if self.world.replace_executors(self.names[r.job_id], r.executor_ids)
        ]


@dataclass(frozen=True)
class RunSettings:
    duration_s: float
    scheduler_start_s: float
    sub_window_s: float = 10.0
    round_interval_s: float = 10.0
    window_s: float = 60.0
    oracle_step_s: float = 60.0


def job_record(spec: SimJobSpec, job_id: str, at: datetime, *, running: bool) -> JobRecord:
    return JobRecord(
        job_id=job_id, name=spec.name, tenant_id=spec.tenant, priority=spec.priority,
        slo=spec.slo, status="admitted" if running else "queued",
        target_executors=spec.initial_executors if running else 0,
        executors_initial=spec.initial_executors, executors_min=spec.min_executors,
        executors_max=spec.max_executors, executor_cores=spec.cores_per_executor,
        executor_memory_mb=spec.memory_mb, actuator="agent", created_at=at,
    )  # fmt: skip


class Frontend(Protocol):
    """How jobs and their reports reach the registry: straight into the in-memory store for
    ``henge sim``, through the HTTP API for ``henge demo``."""

    def register(self, spec: SimJobSpec, at: datetime, running: bool) -> tuple[str, int]:
        """Register ``spec`` (``running``: already admitted at its initial size, as jobs that
        arrive before the scheduler starts are); return its job id and starting target."""
        ...

    def report(self, job_id: str, document: Mapping[str, Any], at: datetime) -> int | None:
        """Deliver one report; return the target the answer hands back, if the path has one."""
        ...


@dataclass
class MemoryFrontend:
    store: MemoryRoundStore

    def register(self, spec: SimJobSpec, at: datetime, running: bool) -> tuple[str, int]:
        job_id = f"job-{len(self.store.jobs) + 1:03d}-{spec.name}"
        record = job_record(spec, job_id, at, running=running)
        self.store.register(record)
        return job_id, record.target_executors

    def report(self, job_id: str, document: Mapping[str, Any], at: datetime) -> int | None:
        self.store.add_report(job_id, document, at)
        return None


class Simulation:
    """One run of a world under one policy, through the production loop."""

    def __init__(
        self,
        world: World,
        core: CoreSettings,
        settings: RunSettings,
        *,
        oracle: bool = True,
        store: RoundStore | None = None,
        frontend: Frontend | None = None,
        realizer: Realizer | None = None,
        clock: VirtualClock | None = None,
        loop: SchedulerLoop | None = None,
        steering: Steering | None = None,
        forecasts: ForecastsFor | None = None,
    ) -> None:
        self.world = world
        self.steering = steering
        self.core = core
        self.settings = settings
        self.clock = clock or VirtualClock(world.start)
        self.memory: MemoryRoundStore | None = None
        if store is None:
            memory = MemoryRoundStore(keep_s=settings.window_s + 2 * settings.sub_window_s)
            store, frontend = memory, frontend or MemoryFrontend(memory)
            self.memory = memory
        assert frontend is not None, "a custom store needs its frontend"
        self.frontend = frontend
        self.agents = WorldAgents(world)
        self.loop = loop or SchedulerLoop(
            store, WorldCluster(world), realizer or self.agents, core, self.clock,
            settings=LoopSettings(window_s=settings.window_s, sub_window_s=settings.sub_window_s),
            forecasts=forecasts(self.agents.names) if forecasts is not None else None,
        )  # fmt: skip
        self.ids: dict[str, str] = {}
        self.targets: dict[str, int] = {}
        """What the scheduler decided for each job."""
        self.applied: dict[str, int] = {}
        """What each job's agent has applied, when targets travel in report answers."""
        self.statuses: dict[str, str] = {}
        self.oracle = OracleTracker(world, step_s=settings.oracle_step_s) if oracle else None
        self.samples: list[RoundSample] = []
        self.actions: list[ActionEvent] = []
        self.utilities: dict[str, float] = {}
        self.latencies: dict[str, float] = {}
        self.running: dict[str, int] = {}
        self.core_seconds = 0.0
        self.errors: dict[str, list[float]] = {}
        """Per job: the policy's model prediction error after each round, when it keeps one."""

    @property
    def scheduler_start(self) -> datetime:
        return self.world.start + timedelta(seconds=self.settings.scheduler_start_s)

    def run(
        self,
        progress: Progress | None = None,
        on_sample: Callable[[RoundSample], None] | None = None,
        on_round: RoundHook | None = None,
    ) -> tuple[list[RoundSample], list[ActionEvent]]:
        """Play the world to its end; ``on_sample`` sees each round's sample, ``on_round`` each
        round's outcome with the simulation (its world and the state the round kept)."""
        step = timedelta(seconds=self.settings.sub_window_s)
        end = self.world.start + timedelta(seconds=self.settings.duration_s)
        next_round = self.scheduler_start
        steps = 0
        while self.clock.now + step <= end:
            self.clock.now += step
            steps += 1
            self._register_arrivals()
            for name, document in self.world.advance(self.clock.now):
                target = self.frontend.report(self.ids[name], document, self.clock.now)
                if target is not None and target != self.applied.get(name):
                    self.world.set_target(name, target)  # the agent obeys the answer
                    self.applied[name] = target
            if self.clock.now >= self.scheduler_start:
                self.core_seconds += self._cores_held() * self.settings.sub_window_s
                if self.clock.now >= next_round:
                    sample = self._round(on_round)
                    if on_sample is not None:
                        on_sample(sample)
                    next_round += timedelta(seconds=self.settings.round_interval_s)
            if progress is not None and steps % 360 == 0:
                progress((self.clock.now - self.world.start) / (end - self.world.start))
        return self.samples, self.actions

    def _register_arrivals(self) -> None:
        elapsed = (self.clock.now - self.world.start).total_seconds()
        for spec in self.world.specs():
            if spec.name in self.ids or spec.arrives_at_s > elapsed:
                continue
            running = self.clock.now < self.scheduler_start
            job_id, target = self.frontend.register(spec, self.clock.now, running)
            self.ids[spec.name] = job_id
            self.agents.names[job_id] = spec.name
            self.statuses[spec.name] = "admitted" if target > 0 else "queued"
            self.targets[spec.name] = target
            if target > 0:
                self.world.set_target(spec.name, target)
                self.applied[spec.name] = target

    def _cores_held(self) -> float:
        return sum(node.cores_requested for node in self.world.cluster().nodes)

    def _round(self, on_round: RoundHook | None = None) -> RoundSample:
        outcome = self.loop.run_round()
        assert outcome is not None  # a simulation has no competing process
        if on_round is not None:
            on_round(outcome, self)
        t_s = (self.clock.now - self.scheduler_start).total_seconds()
        names = self.agents.names
        plan = outcome.plan
        for admission in plan.admissions:
            self.statuses[names[admission.job_id]] = admission.status.value
        for change in plan.changes:
            name = names[change.job_id]
            self.targets[name] = change.to_executors
            kind = action_kind(plan, change.job_id)
            self.actions.append(ActionEvent(t_s, kind, name, change.from_executors,
                                            change.to_executors, change.reason))  # fmt: skip
        for replaced in outcome.replaced:
            name, held = names[replaced.job_id], self.targets[names[replaced.job_id]]
            self.actions.append(ActionEvent(t_s, plan.action.value, name, held, held,
                                            replaced.reason))  # fmt: skip
        if self.steering is not None:
            self._steer(t_s)
        sample = self._sample(outcome, t_s)
        self.samples.append(sample)
        self._note_errors()
        return sample

    def _steer(self, t_s: float) -> None:
        """Impose the steering's allocation, each change recorded as a ``reconfigure`` so that
        a reference's changes are counted as a policy's are."""
        assert self.steering is not None
        specs = [s for s in self.world.specs() if s.name in self.ids]
        for name, executors in self.steering(self.world, specs, self.clock.now).items():
            held = self.targets.get(name)
            if executors != held:
                self.world.set_target(name, executors)
                self.targets[name] = executors
                if held is not None:
                    self.actions.append(ActionEvent(t_s, "reconfigure", name, held, executors,
                                                    "the reference's allocation"))  # fmt: skip

    def _note_errors(self) -> None:
        """Per-job model errors, from a policy state that keeps them under ``errors`` (``henge``,
        ``utilitarian``)."""
        stored = self.memory.state if self.memory is not None else None
        policy_state = (stored or {}).get("policy_state") or {}
        for job_id, error in (policy_state.get("errors") or {}).items():
            name = self.agents.names.get(job_id)
            if name is not None:
                self.errors.setdefault(name, []).append(float(error))

    def model_errors(self) -> dict[str, dict[str, float]]:
        """Per job: the mean, largest and final model error over the rounds that had one."""
        return {
            name: {"mean": sum(values) / len(values), "max": max(values), "final": values[-1]}
            for name, values in sorted(self.errors.items())
        }

    def _sample(self, outcome: RoundOutcome, t_s: float) -> RoundSample:
        names = self.agents.names
        for view in outcome.snapshot.jobs:
            if view.metrics is not None:  # between reports a job keeps its last measured utility
                self.utilities[view.name] = view.metrics.utility
                if view.metrics.latency_ms is not None:
                    self.latencies[view.name] = view.metrics.latency_ms
                if view.metrics.executors_reported is not None:
                    self.running[view.name] = view.metrics.executors_reported
        utilities = {
            name: self.utilities.get(name, 0.0) if status == "admitted" else 0.0
            for name, status in self.statuses.items()
        }
        specs = [s for s in self.world.specs() if s.name in self.ids]
        plan = outcome.plan
        return RoundSample(
            t_s=t_s,
            state=plan.state.value,
            action=plan.action.value,
            job=names.get(plan.job_id) if plan.job_id else None,
            reason=plan.reason,
            total_utility=sum(utilities.values()),
            max_utility=sum(s.priority for s in specs),
            oracle_utility=self.oracle.utility(specs, self.clock.now) if self.oracle else None,
            utilities=utilities,
            executors=dict(self.targets),
            oracle_utilities=(
                self.oracle.job_utilities(specs, self.clock.now) if self.oracle else None
            ),
            latencies={name: self.latencies.get(name) for name in utilities},
            running={name: self.running.get(name, 0) for name in utilities},
        )


def simulate(
    world: World,
    *,
    scenario: str,
    policy: str,
    seed: int,
    settings: RunSettings,
    policy_params: Mapping[str, Any] | None = None,
    core_overrides: Mapping[str, Any] | None = None,
    oracle: bool = True,
    progress: Progress | None = None,
    events: Sequence[EventMark] = (),
    steering: Steering | None = None,
    forecasts: ForecastsFor | None = None,
    on_round: RoundHook | None = None,
) -> SimResult:
    """Run ``world`` under ``policy`` and return what happened; ``events`` (the scenario's, for
    recovery times) are passed through to the result. With ``steering`` the executors it picks
    replace the policy's after every round; ``on_round`` sees each round's outcome."""
    started = time.perf_counter()
    core = CoreSettings(policy=policy, policy_params=dict(policy_params or {}),
                        **dict(core_overrides or {}))  # fmt: skip
    run = Simulation(world, core, settings, oracle=oracle, steering=steering, forecasts=forecasts)
    samples, actions = run.run(progress, on_round=on_round)
    return SimResult(
        scenario=scenario,
        policy=policy,
        seed=seed,
        policy_params=dict(policy_params or {}),
        sim_seconds=settings.duration_s - settings.scheduler_start_s,
        round_interval_s=settings.round_interval_s,
        jobs=tuple(world.specs()),
        samples=tuple(samples),
        actions=tuple(actions),
        executor_core_seconds=run.core_seconds,
        wall_seconds=time.perf_counter() - started,
        events=tuple(events),
        model_errors=run.model_errors(),
    )
