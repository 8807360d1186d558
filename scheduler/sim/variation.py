"""Seed-dependent variation of a job's input: a trace's start offset and random bursts.

A scenario asks for it per job (``input.trace.jitter_minutes``, ``input.bursts``); without those
keys nothing is drawn, so the input is the same for every seed. Each kind of draw has its own
``random.Random`` seeded with the seed and the job's name, apart from the job's noise stream
(``world.py``): adding bursts to a job changes neither its trace offset nor its noise.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

from scheduler.sim.scenario import BurstSpec, InputSpec, Spike


@dataclass(frozen=True)
class SeededInput:
    """A job's input for one seed: the base rate to play, and the bursts on top of it."""

    spec: InputSpec
    bursts: tuple[Spike, ...] = ()


def seeded_input(spec: InputSpec, job: str, seed: int, until_s: float) -> SeededInput:
    """``spec`` with the trace offset drawn for ``seed`` and ``job`` applied, and the bursts
    drawn over ``[0, until_s)``."""
    varied = spec
    trace = spec.trace
    if trace is not None and trace.jitter_minutes > 0:
        rng = random.Random(f"{seed}:{job}:trace-jitter")
        start = trace.start_minute + rng.randrange(trace.jitter_minutes)
        varied = dataclasses.replace(spec, trace=dataclasses.replace(trace, start_minute=start))
    if spec.bursts is None:
        return SeededInput(varied)
    rng = random.Random(f"{seed}:{job}:bursts")
    return SeededInput(varied, burst_spikes(spec.bursts, job, rng, until_s))


def burst_spikes(
    bursts: BurstSpec, job: str, rng: random.Random, until_s: float
) -> tuple[Spike, ...]:
    """Bursts as input spikes of ``job``: exponential gaps of mean ``3600 / per_hour`` seconds
    from time 0 and from the end of each burst, until ``until_s``."""
    mean_gap_s = 3600.0 / bursts.per_hour
    spikes: list[Spike] = []
    t = rng.expovariate(1.0 / mean_gap_s)
    while t < until_s:
        spikes.append(Spike(t, bursts.duration_s, bursts.factor, (job,)))
        t += bursts.duration_s + rng.expovariate(1.0 / mean_gap_s)
    return tuple(spikes)
