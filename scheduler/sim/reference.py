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
of the past or for its mean utility over that stretch (what a reactive scheduler can know), or
even for the worst input of the next seconds or its mean utility over them (what none can).
Holding each allocation that moves executors for a quiesce before deciding again
(``quiesce_s``), as ``henge`` does, shows what that wait alone costs.
"""

from __future__ import annotations

import dataclasses
import math
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
    ``lookahead_s`` after it (sampled every ``step_s``), or with ``expected`` at their mean
    utility over those inputs."""

    name: str
    lookback_s: float
    lookahead_s: float
    summary: str
    expected: bool = False
    quiesce_s: float = 0.0
    """After a decision that moves executors, the allocation is kept this long (in whole
    rounds) before the next decision, and a job arriving meanwhile keeps its admission size
    until then; 0: a decision every round."""

    def moments(self, now: datetime, step_s: float) -> tuple[datetime, ...]:
        offsets: list[float] = []
        at = -self.lookback_s
        while at <= self.lookahead_s + 1e-9:
            offsets.append(at)
            at += step_s
        return tuple(now + timedelta(seconds=d) for d in offsets)

    def steering(self, step_s: float) -> Steering:
        """A steering for one run: it remembers its last move."""
        last: list[tuple[datetime, Mapping[str, int]]] = []  # (when, the allocation it moved to)

        def allocate(world: World, specs: Sequence[SimJobSpec], now: datetime) -> Mapping[str, int]:
            if last and (now - last[0][0]).total_seconds() < self.quiesce_s - 1e-9:
                return last[0][1]
            moments = self.moments(now, step_s)
            solution = solve(world, specs, now, times=moments, expected=self.expected)
            if not last or solution.executors != last[0][1]:  # (the first decision is a move)
                last[:] = [(now, solution.executors)]
            return solution.executors

        return allocate

    def with_quiesce(self, quiesce_s: float) -> Reference:
        """The same reference keeping each allocation that moves executors for ``quiesce_s``
        seconds before it decides again (0: as it is, deciding every round)."""
        if not (math.isfinite(quiesce_s) and quiesce_s >= 0):
            raise ValueError(f"quiesce_s must be a finite number of seconds >= 0, not {quiesce_s}")
        if quiesce_s == 0:
            return self
        return dataclasses.replace(
            self,
            name=f"{self.name}-quiesce-{quiesce_s:g}s",
            summary=f"{self.summary}, holding each move for {quiesce_s:g} s",
            quiesce_s=quiesce_s,
        )


ORACLE_PLAYED = Reference(
    "oracle-played",
    0.0,
    0.0,
    "the oracle's own allocation: true curves at the input of the moment",
)
CLAIRVOYANT = Reference(
    "clairvoyant-next-10s",
    0.0,
    10.0,
    "true curves at the worst input of the next 10 s (knows the future)",
)
DEFAULT_LOOKBACKS: tuple[float, ...] = (30.0, 60.0)
"""The reactive references' stretches of past input: on ``tiers-diurnal`` 30 s did best of
10 to 300 s (shorter ones miss the next rise, longer ones hold cores a peak has left)."""


DEFAULT_MEANS: tuple[float, ...] = (60.0,)
"""The stretches the mean-utility references average over: on ``tiers-diurnal`` 60 to 120 s
did best of 30 to 300 s, and better than the worst input of any stretch."""


def reactive(lookback_s: float, *, expected: bool = False) -> Reference:
    """True curves at the worst input of the last ``lookback_s``: what a scheduler that knows
    only the past could do with exact models and a decision every round. With ``expected``, at
    their mean utility over those inputs instead: one that weighs how the recent input spread,
    where the worst input makes every count below it worth nothing."""
    kind, valued = (
        ("mean-last", "their mean utility over the inputs")
        if expected
        else ("last", "the worst input")
    )
    return Reference(
        f"true-models-{kind}-{lookback_s:g}s",
        lookback_s,
        0.0,
        f"true curves at {valued} of the last {lookback_s:g} s "
        "(a reactive scheduler with exact models)",
        expected=expected,
    )


def foreseeing(lookahead_s: float) -> Reference:
    """True curves valued at their mean utility over the inputs of the next ``lookahead_s``:
    what a scheduler that knew the input until its next decision could do. Holding each move
    for a quiesce of that length, it shows what a wait between decisions leaves within reach
    when only the future is unknown to the scheduler."""
    return Reference(
        f"clairvoyant-mean-next-{lookahead_s:g}s",
        0.0,
        lookahead_s,
        f"true curves at their mean utility over the inputs of the next {lookahead_s:g} s "
        "(knows the future)",
        expected=True,
    )


def references(
    lookbacks: Sequence[float] = DEFAULT_LOOKBACKS,
    means: Sequence[float] = DEFAULT_MEANS,
    quiesce_s: float = 0.0,
    foresights: Sequence[float] = (),
) -> tuple[Reference, ...]:
    """The played oracle, a reactive reference per lookback and per mean's stretch, the
    clairvoyant one and one per foresight's stretch, each holding every move for ``quiesce_s``
    (0: deciding every round)."""
    chosen = (
        ORACLE_PLAYED,
        *(reactive(s) for s in dict.fromkeys(lookbacks)),
        *(reactive(s, expected=True) for s in dict.fromkeys(means)),
        CLAIRVOYANT,
        *(foreseeing(s) for s in dict.fromkeys(foresights)),
    )
    return tuple(r.with_quiesce(quiesce_s) for r in chosen)


REFERENCES: tuple[Reference, ...] = references()
