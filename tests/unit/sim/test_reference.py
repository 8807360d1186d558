"""Reference allocations (scheduler.sim.reference): the oracle valued over a stretch of input,
imposed on the simulated world every round in place of the policy's plan."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from scheduler.bench.reference import measure_references
from scheduler.sim.oracle import solve
from scheduler.sim.reference import (
    REFERENCE_POLICY,
    REFERENCES,
    Reference,
    foreseeing,
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


def test_a_reference_with_a_quiesce_keeps_each_move_that_long() -> None:
    world, jobs = RisingWorld(), [spec("a")]
    at = [T0 + timedelta(seconds=s) for s in (0, 10, 20, 30, 40, 50)]
    each_round = reactive(0.0).steering(10.0)
    assert [each_round(world, jobs, t)["a"] for t in at] == [2, 4, 4, 4, 4, 4]
    # Its first move (to 2) is held for 30 s: the rise at T0 + 10 s is answered at T0 + 30 s.
    slow = reactive(0.0).with_quiesce(30.0).steering(10.0)
    assert [slow(world, jobs, t)["a"] for t in at] == [2, 2, 2, 4, 4, 4]


def test_a_foreseeing_reference_meets_a_rise_before_it_comes() -> None:
    world, jobs = RisingWorld(), [spec("a")]
    ahead = foreseeing(10.0)
    offsets = [(t - T0).total_seconds() for t in ahead.moments(T0, 10.0)]
    assert offsets == [0.0, 10.0] and ahead.expected
    # At T0 two executors earn 10 now and nothing from T0 + 10 s: 5 on average, against 10
    # for four; the reactive reference answers the rise only once it has come.
    assert ahead.steering(10.0)(world, jobs, T0) == {"a": 4}
    assert reactive(0.0).steering(10.0)(world, jobs, T0) == {"a": 2}


def test_a_quiesce_follows_a_move_only() -> None:
    # The first move (to 2) is held until T0 + 15 s; the decision at T0 + 20 s moves nothing,
    # so it starts no quiesce, and the rise at T0 + 30 s is answered at once.
    class Later(RisingWorld):
        def true_utility(self, job: str, executors: int, now: datetime) -> float:
            return super().true_utility(job, executors, now - timedelta(seconds=20))

    world, jobs = Later(), [spec("a")]
    slow = reactive(0.0).with_quiesce(15.0).steering(10.0)
    at = [T0 + timedelta(seconds=s) for s in (0, 10, 20, 30, 40)]
    assert [slow(world, jobs, t)["a"] for t in at] == [2, 2, 2, 4, 4]


def test_each_seed_of_a_measure_plays_a_steering_of_its_own() -> None:
    # A steering remembers its last move: shared by the seeds, the second would start on the
    # first one's last allocation and, its clock behind that move, keep it for the whole run.
    slow = (reactive(30.0, expected=True).with_quiesce(60.0),)
    both = measure_references(["demo"], [1, 2], slow)["demo"][slow[0].name]["oracle_fraction"]
    alone = [
        measure_references(["demo"], [seed], slow)["demo"][slow[0].name]["oracle_fraction"]["mean"]
        for seed in (1, 2)
    ]
    assert both["mean"] == pytest.approx(sum(alone) / 2, abs=1e-3)
    assert both["worst"] == pytest.approx(min(alone), abs=1e-3)


def test_every_reference_of_a_list_holds_its_moves_for_the_quiesce_asked() -> None:
    chosen = references((30.0,), means=(60.0,), quiesce_s=60.0)
    assert [(r.name, r.quiesce_s) for r in chosen] == [
        ("oracle-played-quiesce-60s", 60.0),
        ("true-models-last-30s-quiesce-60s", 60.0),
        ("true-models-mean-last-60s-quiesce-60s", 60.0),
        ("clairvoyant-next-10s-quiesce-60s", 60.0),
    ]
    assert all(r.summary.endswith(", holding each move for 60 s") for r in chosen)
    assert references((30.0,), means=(60.0,)) == references((30.0,), means=(60.0,), quiesce_s=0)


@pytest.mark.parametrize("quiesce_s", [-1.0, math.inf, math.nan])
def test_a_quiesce_is_finite_seconds(quiesce_s: float) -> None:
    with pytest.raises(ValueError, match="quiesce_s"):
        reactive(30.0).with_quiesce(quiesce_s)


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
    ahead = references((30.0,), means=(), foresights=(60.0, 20.0, 60.0), quiesce_s=20.0)
    assert [(r.name, r.lookahead_s, r.expected, r.quiesce_s) for r in ahead[-2:]] == [
        ("clairvoyant-mean-next-60s-quiesce-20s", 60.0, True, 20.0),
        ("clairvoyant-mean-next-20s-quiesce-20s", 20.0, True, 20.0),
    ]


def test_a_steering_replaces_the_policy_plan_every_round() -> None:
    scn = dataclasses.replace(scenario(), duration_s=1500)  # a 2000 rows/s job starting at 4
    calls: list[datetime] = []

    def seven(world: World, specs: Sequence[SimJobSpec], now: datetime) -> Mapping[str, int]:
        calls.append(now)
        return {s.name: 7 for s in specs}

    result = run_scenario(scn, REFERENCE_POLICY, 1, steering=seven)
    acting = [s for s in result.samples if s.t_s >= 0]
    assert len(calls) == len(acting)
    assert all(s.executors == {"a": 7} for s in acting)
    # The one change is the steering's, counted as a policy's would be; the policy made none.
    assert [(a.kind, a.job, a.from_executors, a.to_executors) for a in result.actions] == [
        ("reconfigure", "a", 4, 7)
    ]
    # The executors the steering set are what the cluster held: 7 cores over the run.
    assert result.executor_core_seconds / result.sim_seconds == pytest.approx(7.0, rel=0.05)


def test_the_played_oracle_reaches_the_bound_on_a_steady_input() -> None:
    scn = dataclasses.replace(scenario(), duration_s=1500)
    (played, *_) = REFERENCES
    summary = summarize(run_scenario(scn, REFERENCE_POLICY, 1, steering=played.steering(10.0)))
    assert summary["utility"]["oracle_fraction"] > 0.97


def test_each_change_a_steering_makes_counts_as_an_action_of_its_job() -> None:
    scn = dataclasses.replace(scenario(), duration_s=1500)

    def flapping(world: World, specs: Sequence[SimJobSpec], now: datetime) -> Mapping[str, int]:
        return {s.name: 5 + int((now - world.start).total_seconds() // 100) % 2 for s in specs}

    result = run_scenario(scn, REFERENCE_POLICY, 1, steering=flapping)
    acting = [s.executors["a"] for s in result.samples if s.t_s >= 0]
    changes = sum(a != b for a, b in itertools.pairwise(acting)) + (acting[0] != 4)
    summary = summarize(result)
    assert changes > 5
    assert summary["actions"]["reconfigure"] == summary["jobs"][0]["actions"] == changes
