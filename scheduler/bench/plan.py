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
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.core.decide import SchedulerState
from scheduler.core.model import JobStatus
from scheduler.core.policies.henge.model import predicted_utility
from scheduler.core.policies.henge.options import job_options
from scheduler.core.policies.henge.product import HengeProductPolicy
from scheduler.core.policies.henge.product_state import ProductState
from scheduler.core.slo import meets_slo
from scheduler.round.loop import RoundOutcome
from scheduler.sim.run import load, run_scenario
from scheduler.sim.runner import Simulation

GOAL_MAE = 0.05
"""The options' mean absolute error of predicted utility, as a fraction of the priority."""

NEAR = 0.5
"""Counts within this fraction of what a job holds are compared."""


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

    def summary(self) -> dict[str, Any]:
        errors = sorted(self.errors)
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
        }


def check_scenario(name: str, seed: int = 1, every: int = 6, warmup_s: float = 600.0) -> PlanCheck:
    """Run scenario ``name`` under ``henge`` and check its options every ``every`` rounds after
    ``warmup_s`` seconds of scheduling."""
    policy = HengeProductPolicy.from_params({})
    found = PlanCheck(name, seed)
    rounds = 0

    def on_round(outcome: RoundOutcome, sim: Simulation) -> None:
        nonlocal rounds
        rounds += 1
        now = outcome.snapshot.taken_at
        if (now - sim.scheduler_start).total_seconds() < warmup_s or rounds % every:
            return
        stored = sim.memory.state if sim.memory is not None else None
        kept = SchedulerState.from_json(stored).policy_state if stored else None
        if not isinstance(kept, ProductState):
            return
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

    run_scenario(load(name), "henge", seed, oracle=False, on_round=on_round)
    return found


def measure_plans(scenarios: Sequence[str], seed: int = 1) -> dict[str, Any]:
    """Per scenario, :meth:`PlanCheck.summary`; the goal is met where every scenario with
    checks has its mean absolute error within :data:`GOAL_MAE`."""
    rows = [check_scenario(name, seed).summary() for name in scenarios]
    checked = [r for r in rows if r["compared"]]
    return {
        "goal_mae": GOAL_MAE,
        "near": NEAR,
        "scenarios": rows,
        "goal_met": bool(checked) and all(r["goal_met"] for r in checked),
    }
