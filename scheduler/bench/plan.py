"""``henge bench plan``: a job's options (:mod:`scheduler.core.policies.henge.options`) checked
against the simulator's truth.

Each scenario runs under ``henge``. Once the warm-up is over, every ``every``-th round asks, for
every admitted job whose model the policy trusts, what its options would say then, and compares
each predicted utility at a count within ±50 % of what the job holds with the world's true
steady-state utility at that count and the input of the moment (``true_utility``, no noise), as
a fraction of the job's priority. The same model's prediction at the true input of the moment
is compared too: the part of the error that is the model's own, apart from the input measured
over the job's window lagging a moving input. The smallest count the options mark as meeting
the SLO now is checked against the same truth.

The same rounds check the capacity plan (:mod:`scheduler.core.policies.henge.capacity_plan`)
over the next :data:`HORIZON_S`: its peak cores against the truth's (at each point of the plan,
each job's smallest count whose true utility meets its SLO at the highest true input within the
point, or the smallest that earns the most true utility it can when none meets it, summed; the
most over the points), the same for the plan given the true input ahead in
place of the forecasts (what the models alone get wrong), and, with the largest node gone, the
tier it names to give way first against the lowest tier in which the oracle, with those cores at
the truth's tightest point, lets a job miss an SLO that some count would meet.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from scheduler.core.decide import SchedulerState
from scheduler.core.model import InputForecast, JobStatus
from scheduler.core.policies.henge.capacity_plan import CapacityPlan, capacity_plan, cores_without
from scheduler.core.policies.henge.model import predicted_utility, smallest
from scheduler.core.policies.henge.options import distrust, job_options
from scheduler.core.policies.henge.product import HengeProductPolicy
from scheduler.core.policies.henge.product_state import ProductState
from scheduler.core.slo import meets_slo
from scheduler.round.loop import RoundOutcome
from scheduler.sim.oracle import solve
from scheduler.sim.run import load, run_scenario
from scheduler.sim.runner import Simulation
from scheduler.sim.types import SimJobSpec, World

GOAL_MAE = 0.05
"""The options' mean absolute error of predicted utility, as a fraction of the priority."""

NEAR = 0.5
"""Counts within this fraction of what a job holds are compared."""

GOAL_CORES = 0.10
"""The capacity plan's peak cores, within this fraction of the truth's."""

HORIZON_S = 600.0
"""How far ahead the capacity plan is checked (as far as the simulator's forecasts reach on
its fastest traces)."""

TRUTH_STEP_S = 10.0
"""The truth's input is read this often within each point of the plan."""


@dataclass
class PlanCheck:
    """What one scenario's checks found."""

    scenario: str
    seed: int
    checks: int = 0
    """Rounds × jobs with a trusted model, checked."""
    untrusted: int = 0
    """Rounds × jobs checked whose model the policy did not trust (no numbers to compare)."""
    errors: list[float] = field(default_factory=list)
    """|predicted − true| utility over the priority, per count compared."""
    model_errors: list[float] = field(default_factory=list)
    """The same with the model predicting at the true input of the moment instead of the
    input measured over the job's window: what the model alone gets wrong."""
    marked: int = 0
    marked_met: int = 0
    """Of the counts marked as the smallest meeting the SLO now, those that truly meet it."""
    tiers: int = 1
    """Priority tiers among the scenario's jobs."""
    core_errors: list[float] = field(default_factory=list)
    """Per round checked, (plan's peak cores − truth's) over the truth's."""
    core_errors_true_input: list[float] = field(default_factory=list)
    """The same with the plan given each job's true input ahead as a trusted forecast: what
    the models alone get wrong."""
    before: set[str] = field(default_factory=set)
    """Jobs admitted when the scheduler started."""
    admitted_at: dict[str, datetime] = field(default_factory=dict)
    """When each job admitted after the scheduler's start was first seen admitted."""
    trusted_after: dict[str, float] = field(default_factory=dict)
    """Of those, the seconds until the policy first trusted its model."""
    held_by: dict[str, int] = field(default_factory=dict)
    """Rounds × new jobs not yet trusted, by what kept the model from trust (its first words)."""
    dropped: int = 0
    dropped_agree: int = 0
    """Of the rounds checked where the oracle, a node short, lets a tier miss, those where the
    plan names the same tier to give way first."""

    def summary(self) -> dict[str, Any]:
        errors = sorted(self.errors)
        cores = [abs(e) for e in self.core_errors]
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "checks": self.checks,
            "untrusted": self.untrusted,
            "compared": len(errors),
            "mae": round(statistics.fmean(errors), 4) if errors else None,
            "p90": round(errors[math.ceil(0.9 * len(errors)) - 1], 4) if errors else None,
            "mae_true_input": (
                round(statistics.fmean(self.model_errors), 4) if self.model_errors else None
            ),
            "marked": self.marked,
            "marked_met": self.marked_met,
            "goal_met": bool(errors) and statistics.fmean(errors) <= GOAL_MAE,
            "tiers": self.tiers,
            "capacity_checks": len(self.core_errors),
            "cores_error": round(statistics.fmean(cores), 4) if cores else None,
            "cores_bias": (
                round(statistics.fmean(self.core_errors), 4) if self.core_errors else None
            ),
            "cores_within": (
                round(sum(e <= GOAL_CORES for e in cores) / len(cores), 3) if cores else None
            ),
            "cores_error_true_input": (
                round(statistics.fmean(map(abs, self.core_errors_true_input)), 4)
                if self.core_errors_true_input
                else None
            ),
            "new_jobs": len(self.admitted_at),
            "trusted_new_jobs": len(self.trusted_after),
            "time_to_trust_median_s": (
                statistics.median(self.trusted_after.values()) if self.trusted_after else None
            ),
            "time_to_trust_max_s": max(self.trusted_after.values(), default=None),
            "held_by": dict(sorted(self.held_by.items(), key=lambda kv: -kv[1])),
            "dropped": self.dropped,
            "dropped_agree": self.dropped_agree,
            "capacity_goal_met": bool(cores) and statistics.fmean(cores) <= GOAL_CORES,
        }


def check_scenario(
    name: str,
    seed: int = 1,
    every: int = 6,
    warmup_s: float = 600.0,
    params: Mapping[str, Any] | None = None,
) -> PlanCheck:
    """Run scenario ``name`` under ``henge`` and check its options every ``every`` rounds after
    ``warmup_s`` seconds of scheduling."""
    policy = HengeProductPolicy.from_params(params or {})
    scenario = load(name)
    found = PlanCheck(name, seed, tiers=len({j.priority for j in scenario.jobs}))
    rounds = 0

    def on_round(outcome: RoundOutcome, sim: Simulation) -> None:
        nonlocal rounds
        rounds += 1
        now = outcome.snapshot.taken_at
        _track_trust(found, outcome, sim, policy)
        if (now - sim.scheduler_start).total_seconds() < warmup_s or rounds % every:
            return
        kept = _kept(sim)
        if kept is None:
            return
        _check_capacity(found, outcome, sim, kept, policy)
        for view in outcome.snapshot.jobs:
            if view.status is not JobStatus.ADMITTED or view.metrics is None:
                continue
            model, error = kept.models.get(view.job_id), kept.errors.get(view.job_id)
            options = job_options(view, model, error, policy.settings, now)
            if not options.trusted:
                found.untrusted += 1
                continue
            found.checks += 1
            name_in_world = sim.agents.names[view.job_id]

            def truth(executors: int, job: str = name_in_world) -> float:
                return sim.world.true_utility(job, executors, now)

            held = view.executors
            rate = sim.world.true_rate(name_in_world, now)
            for option in options.options:
                n = option.executors
                if abs(n - held) <= NEAR * held:
                    true = truth(n)
                    found.errors.append(abs(option.now.utility - true) / view.priority)
                    assert model is not None  # (trusted)
                    known = predicted_utility(model, view, n, rate)
                    found.model_errors.append(abs(known - true) / view.priority)
            if options.meets_now is not None:
                found.marked += 1
                found.marked_met += meets_slo(truth(options.meets_now), view.priority)

    run_scenario(scenario, "henge", seed, policy_params=params, oracle=False, on_round=on_round)
    return found


def _kept(sim: Simulation) -> ProductState | None:
    stored = sim.memory.state if sim.memory is not None else None
    kept = SchedulerState.from_json(stored).policy_state if stored else None
    return kept if isinstance(kept, ProductState) else None


def _track_trust(
    found: PlanCheck, outcome: RoundOutcome, sim: Simulation, policy: HengeProductPolicy
) -> None:
    """For each job admitted after the scheduler's start, the time until its model is trusted,
    and what kept it from trust until then."""
    now = outcome.snapshot.taken_at
    waiting = []
    for view in outcome.snapshot.jobs:
        job = view.job_id
        if (
            view.status is not JobStatus.ADMITTED
            or job in found.trusted_after
            or job in found.before
        ):
            continue
        if job not in found.admitted_at:
            if now <= sim.scheduler_start:
                found.before.add(job)
                continue
            found.admitted_at[job] = now
        waiting.append(view)
    kept = _kept(sim) if waiting else None
    for view in waiting:
        model = kept.models.get(view.job_id) if kept is not None else None
        error = kept.errors.get(view.job_id) if kept is not None else None
        reason = distrust(view, model, error, policy.settings)
        if reason is None:
            seconds = (now - found.admitted_at[view.job_id]).total_seconds()
            found.trusted_after[view.job_id] = seconds
        else:
            key = _why_untrusted(reason)
            found.held_by[key] = found.held_by.get(key, 0) + 1


_UNTRUSTED = {
    "no model yet": "no model yet",
    "the model has learned from": "too few windows",
    "the model's recent error": "recent error above model_max_error",
    "no batch timings yet": "no batch timings yet",
    "no input measured": "no input measured",
}


def _why_untrusted(reason: str) -> str:
    """The short name of a reason :func:`distrust` gives."""
    return next((name for start, name in _UNTRUSTED.items() if reason.startswith(start)), reason)


def _check_capacity(
    found: PlanCheck,
    outcome: RoundOutcome,
    sim: Simulation,
    kept: ProductState,
    policy: HengeProductPolicy,
) -> None:
    snapshot = outcome.snapshot
    jobs = [j for j in snapshot.jobs if j.status is JobStatus.ADMITTED]
    if not jobs:
        return
    trusted = {j.job_id: j.forecast is not None and j.forecast.trusted() for j in jobs}
    now = snapshot.taken_at
    short = cores_without(snapshot.cluster, 1) if len(snapshot.cluster.nodes) > 1 else None
    capacity = short if short is not None else snapshot.cluster.total_cores
    plan = capacity_plan(
        jobs, kept.models, kept.errors, trusted, policy.settings, now, capacity, HORIZON_S
    )
    by_name = {s.name: s for s in sim.world.specs()}
    specs = [by_name[sim.agents.names[j.job_id]] for j in jobs]
    truth = _true_cores(sim.world, specs, plan)
    peak = max(truth)
    if peak > 0:
        found.core_errors.append((plan.peak_cores - peak) / peak)
        ahead = [_true_input(sim.world, s, now) for s in specs]
        known = [replace(j, forecast=f) for j, f in zip(jobs, ahead, strict=True)]
        every = dict.fromkeys(trusted, True)
        ideal = capacity_plan(
            known, kept.models, kept.errors, every, policy.settings, now, capacity, HORIZON_S
        )
        ideal_peak = max(_true_cores(sim.world, specs, ideal))
        found.core_errors_true_input.append((ideal.peak_cores - ideal_peak) / ideal_peak)
    if short is None:
        return
    moment = plan.at(truth.index(peak))
    solution = solve(sim.world, specs, moment, capacity_cores=short)
    world = sim.world
    missing = [  # (of the jobs whose SLO some count meets: the others miss it whatever the cores)
        s.priority
        for s in specs
        if meets_slo(world.true_utility(s.name, s.max_executors, moment), s.priority)
        and not meets_slo(world.true_utility(s.name, solution.executors[s.name], moment),
                          s.priority)
    ]  # fmt: skip
    if missing:
        found.dropped += 1
        named = plan.first_dropped
        found.dropped_agree += named is not None and named.priority == min(missing)


def _true_input(world: World, spec: SimJobSpec, now: datetime) -> InputForecast:
    """The job's true input over the horizon, every :data:`TRUTH_STEP_S`, as a forecast."""
    steps = math.ceil(HORIZON_S / TRUTH_STEP_S) + 1
    rates = tuple(
        world.true_rate(spec.name, now + timedelta(seconds=k * TRUTH_STEP_S)) for k in range(steps)
    )
    return InputForecast(now, rates, rates, rates, error=0.0, step_s=TRUTH_STEP_S)


def _true_cores(world: World, specs: Sequence[SimJobSpec], plan: CapacityPlan) -> list[int]:
    """At each point of ``plan``, the cores the jobs truly need (see the module docstring)."""
    reads = max(1, round(plan.step_s / TRUTH_STEP_S))
    needs = []
    for k in range(plan.points):
        moments = [plan.at(k) + timedelta(seconds=i * plan.step_s / reads) for i in range(reads)]
        needs.append(sum(_true_need(world, s, moments) * s.cores_per_executor for s in specs))
    return needs


def _true_need(world: World, spec: SimJobSpec, moments: Sequence[datetime]) -> int:
    """The smallest count whose true utility meets the SLO at each of ``moments``; when none
    does, the smallest that earns the most true utility there (beyond it more earns nothing)."""
    low, high = spec.min_executors, spec.max_executors

    def least(n: int) -> float:
        return min(world.true_utility(spec.name, n, t) for t in moments)

    found = smallest(low, high, lambda n: meets_slo(least(n), spec.priority))
    if found is not None:
        return found
    values = [least(n) for n in range(low, high + 1)]
    best = max(values)
    return low + next(i for i, v in enumerate(values) if v >= best - 1e-9)


def measure_plans(
    scenarios: Sequence[str], seed: int = 1, params: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Per scenario, :meth:`PlanCheck.summary`; the goal is met where every scenario with
    checks has its mean absolute error within :data:`GOAL_MAE`."""
    rows = [check_scenario(name, seed, params=params).summary() for name in scenarios]
    checked = [r for r in rows if r["compared"]]
    tiered = [r for r in rows if r["tiers"] > 1 and r["capacity_checks"]]
    return {
        "params": dict(params or {}),
        "goal_mae": GOAL_MAE,
        "near": NEAR,
        "goal_cores": GOAL_CORES,
        "horizon_s": HORIZON_S,
        "scenarios": rows,
        "goal_met": bool(checked) and all(r["goal_met"] for r in checked),
        "capacity_goal_met": bool(tiered) and all(r["capacity_goal_met"] for r in tiered),
    }
