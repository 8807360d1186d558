"""Reference allocations (scheduler.sim.reference): the oracle valued over a stretch of input,
imposed on the simulated world every round in place of the policy's plan."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from scheduler.bench.reference import measure_references
from scheduler.sim.oracle import solve
from scheduler.sim.reference import (
    REFERENCE_POLICY,
    REFERENCES,
    Reference,
    reactive,
    references,
)
from scheduler.sim.run import run_scenario
from scheduler.sim.summary import summarize
from scheduler.sim.types import SimJobSpec, World

from .test_oracle import spec
from .world_kit import scenario

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class RisingWorld:
    """One job that needs 2 executors at T0 and 4 from T0 + 10 s (a step curve)."""

    start = T0

    def true_utility(self, job: str, executors: int, now: datetime) -> float:
        needed = 2 if now < T0 + timedelta(seconds=10) else 4
        return 10.0 if executors >= needed else 0.0

    def capacity_cores(self, now: datetime) -> float:
        return 8.0


def test_each_count_is_valued_at_its_worst_moment() -> None:
    world = RisingWorld()
    now_only = solve(world, [spec("a")], T0)
    ahead = solve(world, [spec("a")], T0, times=(T0, T0 + timedelta(seconds=10)))
    assert now_only.executors == {"a": 2}
    assert ahead.executors == {"a": 4}


def test_a_reference_deciding_every_30_s_keeps_its_allocation_in_between() -> None:
    world, jobs = RisingWorld(), [spec("a")]
    at = [T0 + timedelta(seconds=s) for s in (0, 10, 20, 30)]
    each_round = reactive(0.0).steering(10.0)
    assert [dict(each_round(world, jobs, t)) for t in at] == [{"a": n} for n in (2, 4, 4, 4)]
    # Deciding every 30 s, the rise at T0 + 10 s is answered only at T0 + 30 s.
    slow = reactive(0.0).deciding_every(30.0).steering(10.0)
    assert [dict(slow(world, jobs, t)) for t in at] == [{"a": n} for n in (2, 2, 2, 4)]


def test_each_seed_of_a_measure_plays_a_steering_of_its_own() -> None:
    # A steering remembers its last decision: shared by the seeds, the second would start on the
    # first one's last allocation and keep it for the whole run.
    slow = (reactive(30.0, expected=True).deciding_every(60.0),)
    both = measure_references(["demo"], [1, 2], slow)["demo"][slow[0].name]["oracle_fraction"]
    alone = [
        measure_references(["demo"], [seed], slow)["demo"][slow[0].name]["oracle_fraction"]["mean"]
        for seed in (1, 2)
    ]
    assert both["mean"] == pytest.approx(sum(alone) / 2, abs=1e-3)
    assert both["worst"] == pytest.approx(min(alone), abs=1e-3)


def test_every_reference_of_a_list_decides_at_the_cadence_asked() -> None:
    chosen = references((30.0,), means=(60.0,), every_s=60.0)
    assert [(r.name, r.every_s) for r in chosen] == [
        ("oracle-played-every-60s", 60.0),
        ("true-models-last-30s-every-60s", 60.0),
        ("true-models-mean-last-60s-every-60s", 60.0),
        ("clairvoyant-next-10s-every-60s", 60.0),
    ]
    assert all(r.summary.endswith(", deciding every 60 s") for r in chosen)
    assert references((30.0,), means=(60.0,)) == references((30.0,), means=(60.0,), every_s=0)


class PeakOnceWorld:
    """Job ``a`` needs 2 executors, 4 from T0 + 20 s, and is worth 10 when it has them; job
    ``b`` needs 3 throughout and is worth 8; 5 cores."""

    start = T0

    def true_utility(self, job: str, executors: int, now: datetime) -> float:
        if job == "b":
            return 8.0 if executors >= 3 else 0.0
        needed = 4 if now >= T0 + timedelta(seconds=20) else 2
        return 10.0 if executors >= needed else 0.0

    def capacity_cores(self, now: datetime) -> float:
        return 5.0


def test_the_mean_utility_over_a_stretch_weighs_a_single_peak_by_its_share() -> None:
    world = PeakOnceWorld()
    times = tuple(T0 + timedelta(seconds=s) for s in (0, 10, 20))
    jobs = [spec("a"), spec("b")]
    # Valued at its worst moment, `a` below 4 is worth nothing: 10 against b's 8.
    assert solve(world, jobs, T0, times=times).executors == {"a": 4, "b": 1}
    # On average over the three moments `a` at 2 is worth 10 * 2/3, and with b's 8 that beats 10.
    mean = solve(world, jobs, T0, times=times, expected=True)
    assert mean.executors == {"a": 2, "b": 3}
    assert mean.utility == pytest.approx(10.0 * 2 / 3 + 8.0)


def test_moments_span_the_lookback_and_the_lookahead_in_steps() -> None:
    reference = Reference("r", lookback_s=30.0, lookahead_s=10.0, summary="")
    offsets = [(t - T0).total_seconds() for t in reference.moments(T0, 10.0)]
    assert offsets == [-30.0, -20.0, -10.0, 0.0, 10.0]
    assert [r.name for r in REFERENCES] == [
        "oracle-played",
        "true-models-last-30s",
        "true-models-last-60s",
        "true-models-mean-last-60s",
        "clairvoyant-next-10s",
    ]
    assert [r.expected for r in REFERENCES] == [False, False, False, True, False]


def test_one_reactive_reference_per_lookback_between_the_bounds() -> None:
    chosen = references((10.0, 120.0, 10.0), means=(90.0, 90.0))  # a repeat is one reference
    assert [(r.name, r.lookback_s, r.lookahead_s, r.expected) for r in chosen] == [
        ("oracle-played", 0.0, 0.0, False),
        ("true-models-last-10s", 10.0, 0.0, False),
        ("true-models-last-120s", 120.0, 0.0, False),
        ("true-models-mean-last-90s", 90.0, 0.0, True),
        ("clairvoyant-next-10s", 0.0, 10.0, False),
    ]


def test_a_steering_replaces_the_policy_plan_every_round() -> None:
    scn = dataclasses.replace(scenario(), duration_s=1500)  # a 2000 rows/s job starting at 4
    calls: list[datetime] = []

    def seven(world: World, specs: Sequence[SimJobSpec], now: datetime) -> Mapping[str, int]:
        calls.append(now)
        return {s.name: 7 for s in specs}

    result = run_scenario(scn, REFERENCE_POLICY, 1, steering=seven)
    acting = [s for s in result.samples if s.t_s >= 0]
    assert len(calls) == len(acting) and not result.actions  # the policy never moved a thing
    assert all(s.executors == {"a": 7} for s in acting)
    # The executors the steering set are what the cluster held: 7 cores over the run.
    assert result.executor_core_seconds / result.sim_seconds == pytest.approx(7.0, rel=0.05)


def test_the_played_oracle_reaches_the_bound_on_a_steady_input() -> None:
    scn = dataclasses.replace(scenario(), duration_s=1500)
    (played, *_) = REFERENCES
    summary = summarize(run_scenario(scn, REFERENCE_POLICY, 1, steering=played.steering(10.0)))
    assert summary["utility"]["oracle_fraction"] > 0.97
