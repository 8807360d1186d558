"""Reference allocations played through the simulated cluster, to tell what the oracle's bound
is worth in practice.

The oracle (:mod:`scheduler.sim.oracle`) values an allocation at its steady state under the
input of one moment: no executor start, no report lag, no backlog. A scheduler's allocation has
to run: executors take their start delay, batches see the input of the next seconds, and a job
short of executors for a while builds a backlog that keeps its latency up after it has them
back. Each reference here is an allocation that knows the jobs' true curves, re-solved every
round and imposed at once, with the scheduler's policy switched off (``static``). Their utility,
as a fraction of the oracle's, shows how much of the bound any scheduler could reach on a
scenario: with true models and a decision every round, sized for the worst input of a stretch
of the past (what a reactive scheduler can know) or even of the next seconds (what none can).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler.sim.oracle import solve
from scheduler.sim.runner import Steering
from scheduler.sim.types import SimJobSpec, World

REFERENCE_POLICY = "static"
"""The policy under a reference: it never moves an executor, so only the reference does."""


@dataclass(frozen=True)
class Reference:
    """True curves valued at the worst input from ``lookback_s`` before a round to
    ``lookahead_s`` after it (sampled every ``step_s``)."""

    name: str
    lookback_s: float
    lookahead_s: float
    summary: str

    def moments(self, now: datetime, step_s: float) -> tuple[datetime, ...]:
        offsets: list[float] = []
        at = -self.lookback_s
        while at <= self.lookahead_s + 1e-9:
            offsets.append(at)
            at += step_s
        return tuple(now + timedelta(seconds=d) for d in offsets)

    def steering(self, step_s: float) -> Steering:
        def allocate(world: World, specs: Sequence[SimJobSpec], now: datetime) -> Mapping[str, int]:
            solution = solve(world, specs, now, times=self.moments(now, step_s))
            return solution.executors

        return allocate


REFERENCES: tuple[Reference, ...] = (
    Reference(
        "oracle-played",
        0.0,
        0.0,
        "the oracle's own allocation: true curves at the input of the moment",
    ),
    Reference(
        "true-models-last-60s",
        60.0,
        0.0,
        "true curves at the worst input of the last 60 s (a reactive scheduler with exact models)",
    ),
    Reference(
        "clairvoyant-next-10s",
        0.0,
        10.0,
        "true curves at the worst input of the next 10 s (knows the future)",
    ),
)
