"""The oracle (scheduler.sim.oracle): exact multiple-choice knapsack over a fake world's true
utility curves, the greedy fallback, and the tracker that limits recomputation."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from scheduler.core.allocation import dp_allocation, greedy_allocation, useful_points
from scheduler.sim.oracle import OracleTracker, oracle_utility, solve
from scheduler.sim.types import SimJobSpec

T0 = datetime(2026, 1, 1, tzinfo=UTC)
Curve = Callable[[int], float]


@dataclass
class FakeWorld:
    """Only what the oracle uses: true utility curves and a capacity that may change."""

    curves: dict[str, Curve]
    capacity: float
    start: datetime = T0
    calls: list[tuple[str, int]] = field(default_factory=list)

    def true_utility(self, job: str, executors: int, now: datetime) -> float:
        self.calls.append((job, executors))
        return self.curves[job](executors)

    def capacity_cores(self, now: datetime) -> float:
        return self.capacity


def spec(name: str, lo: int = 1, hi: int = 8, cores: int = 1, priority: float = 10.0) -> SimJobSpec:
    return SimJobSpec(
        name=name,
        tenant="t",
        priority=priority,
        slo={"juice": 1.0},
        initial_executors=lo,
        min_executors=lo,
        max_executors=hi,
        cores_per_executor=cores,
    )


def knee(priority: float, needed: int) -> Curve:
    """Juice grows linearly with executors until ``needed`` executors keep up."""
    return lambda e: priority * min(1.0, e / needed)


def step(priority: float, needed: int) -> Curve:
    return lambda e: priority if e >= needed else 0.0


def test_two_jobs_known_optimum() -> None:
    # 6 cores. A: 10 * min(1, e/4); B: 30 only from 4 executors. Giving B its 4 and A the
    # remaining 2 earns 30 + 5 = 35; satisfying A instead (4 + 2) earns only 10.
    world = FakeWorld({"A": knee(10, 4), "B": step(30, 4)}, capacity=6)
    solution = solve(world, [spec("A"), spec("B", priority=30)], T0)
    assert solution.method == "dp"
    assert solution.utility == pytest.approx(35.0)
    assert solution.executors == {"A": 2, "B": 4}


def test_job_that_can_never_meet_its_slo_gets_only_its_useful_executors() -> None:
    # C saturates at half its priority from 5 executors on; more executors are useless, so the
    # oracle stops at 5 even with room for 8, and the total stays below the max utility.
    world = FakeWorld({"A": knee(10, 4), "C": lambda e: 20 * min(0.5, e / 10)}, capacity=100)
    solution = solve(world, [spec("A"), spec("C", priority=20)], T0)
    assert solution.utility == pytest.approx(20.0)
    assert solution.utility < 10 + 20
    assert solution.executors == {"A": 4, "C": 5}


def test_capacity_is_floored_to_whole_cores_and_scaled_by_cores_per_executor() -> None:
    # 2-core and 4-core executors in 9.7 cores: at most 8 cores are usable in units of 2.
    world = FakeWorld({"A": knee(10, 4), "B": knee(10, 2)}, capacity=9.7)
    specs = [spec("A", cores=2), spec("B", cores=4)]
    solution = solve(world, specs, T0)
    used = solution.executors["A"] * 2 + solution.executors["B"] * 4
    assert solution.capacity_cores == 9
    assert used <= 9
    # A 2 (5) + B 1 (5) = 10 with 8 cores; A 4 (10) + B 1 (5) would need 12 cores.
    assert solution.utility == pytest.approx(10.0)


def test_minimum_executors_are_always_held() -> None:
    # B is worthless but its minimum of 3 executors still takes 3 of the 6 cores.
    world = FakeWorld({"A": knee(10, 6), "B": lambda e: 0.0}, capacity=6)
    solution = solve(world, [spec("A"), spec("B", lo=3)], T0)
    assert solution.executors == {"A": 3, "B": 3}
    assert solution.utility == pytest.approx(5.0)


def test_minimums_that_do_not_fit_let_jobs_drop_to_zero() -> None:
    world = FakeWorld({"A": knee(10, 2), "B": knee(40, 2)}, capacity=3)
    solution = solve(world, [spec("A", lo=2), spec("B", lo=2)], T0)
    assert solution.executors == {"A": 1, "B": 2}
    assert solution.utility == pytest.approx(45.0)
    assert ("A", 0) not in world.calls  # zero executors earn nothing without asking the world


def test_non_monotone_curve_keeps_the_best_cheapest_point() -> None:
    # Utility peaks at 3 executors and falls after: the oracle holds 3 even with room for 8.
    world = FakeWorld({"A": lambda e: [0, 2, 5, 9, 7, 6, 6, 6, 6][e]}, capacity=8)
    solution = solve(world, [spec("A")], T0)
    assert solution.executors == {"A": 3}
    assert solution.utility == 9


def test_counts_beyond_capacity_are_not_evaluated() -> None:
    world = FakeWorld({"A": knee(10, 50)}, capacity=5)
    oracle_utility(world, [spec("A", hi=1000)], T0)
    assert max(e for _, e in world.calls) == 5


def test_no_jobs_earn_nothing() -> None:
    assert oracle_utility(FakeWorld({}, capacity=10), [], T0) == 0.0


def test_useful_points_keep_only_strict_increases() -> None:
    choices = useful_points(
        "A", [1.0, 1.0, 2.0, 2.0, 1.5, 3.0], lowest=2, cores_per_executor=2, capacity=100
    )
    assert choices.points == ((2, 4, 1.0), (4, 8, 2.0), (7, 14, 3.0))


def brute_force(curves: Sequence[Sequence[float]], costs: Sequence[int], spare: int) -> float:
    """Best total over every combination of indices (index 0 costs nothing extra)."""
    best = -math.inf
    for combo in itertools.product(*(range(len(c)) for c in curves)):
        used = sum(i * cost for i, cost in zip(combo, costs, strict=True))
        if used <= spare:
            best = max(best, sum(c[i] for c, i in zip(curves, combo, strict=True)))
    return best


def random_monotone(rng: random.Random, length: int) -> list[float]:
    values = [0.0]
    for _ in range(length - 1):
        values.append(values[-1] + rng.choice([0.0, 0.0, rng.uniform(0, 5), rng.uniform(0, 20)]))
    return values


@pytest.mark.parametrize("seed", range(60))
def test_dp_matches_brute_force_and_greedy_never_beats_it(seed: int) -> None:
    rng = random.Random(seed)
    jobs = rng.randint(1, 4)
    curves = [random_monotone(rng, rng.randint(1, 6)) for _ in range(jobs)]
    costs = [rng.randint(1, 3) for _ in range(jobs)]
    spare = rng.randint(0, 12)
    choices = [
        useful_points(f"j{j}", curve, 0, cost, capacity=10**6)
        for j, (curve, cost) in enumerate(zip(curves, costs, strict=True))
    ]
    exact, chosen = dp_allocation(choices, spare)
    assert exact == pytest.approx(brute_force(curves, costs, spare))
    picked = [job.points[i] for job, i in zip(choices, chosen, strict=True)]
    assert sum(p[1] for p in picked) <= spare
    assert sum(p[2] for p in picked) == pytest.approx(exact)
    greedy, greedy_chosen = greedy_allocation(choices, spare)
    greedy_picked = [job.points[i] for job, i in zip(choices, greedy_chosen, strict=True)]
    assert sum(p[1] for p in greedy_picked) <= spare
    assert greedy <= exact + 1e-9


@pytest.mark.parametrize("seed", range(40))
def test_greedy_agrees_with_dp_on_concave_curves(seed: int) -> None:
    # With one core per executor and diminishing returns, greedy by marginal utility is exact.
    rng = random.Random(seed)
    specs, curves = [], {}
    for j in range(rng.randint(1, 5)):
        priority, needed = rng.uniform(1, 50), rng.randint(1, 10)
        curves[f"j{j}"] = lambda e, p=priority, n=needed: p * math.sqrt(min(1.0, e / n))
        specs.append(spec(f"j{j}", lo=rng.randint(0, 2), hi=rng.randint(2, 12), priority=priority))
    world = FakeWorld(curves, capacity=rng.randint(6, 40))
    exact = solve(world, specs, T0)
    fallback = solve(world, specs, T0, max_dp_cells=0)
    assert (exact.method, fallback.method) == ("dp", "greedy")
    assert fallback.utility == pytest.approx(exact.utility)


def test_greedy_fallback_on_a_large_cluster_is_fast_and_close() -> None:
    rng = random.Random(7)
    curves = {f"j{j}": knee(rng.uniform(1, 50), rng.randint(5, 60)) for j in range(40)}
    specs = [spec(name, hi=80) for name in curves]
    world = FakeWorld(curves, capacity=900)
    fallback = solve(world, specs, T0, max_dp_cells=1000)
    exact = solve(world, specs, T0)
    assert fallback.method == "greedy"
    assert fallback.utility <= exact.utility + 1e-9
    assert fallback.utility >= 0.99 * exact.utility


def test_tracker_recomputes_once_per_step_or_when_jobs_change() -> None:
    world = FakeWorld({"A": knee(10, 4), "B": knee(10, 4)}, capacity=4)
    tracker = OracleTracker(world, step_s=60)
    a, both = [spec("A")], [spec("A"), spec("B")]
    assert tracker.utility(a, T0) == pytest.approx(10.0)
    world.capacity = 2  # within the same 60 s bucket the cached value stands
    assert tracker.utility(a, T0 + timedelta(seconds=59)) == pytest.approx(10.0)
    assert tracker.computations == 1
    assert tracker.utility(both, T0 + timedelta(seconds=59)) == pytest.approx(5.0)
    assert tracker.utility(both, T0 + timedelta(seconds=60)) == pytest.approx(5.0)
    world.capacity = 8
    assert tracker.utility(both, T0 + timedelta(seconds=90)) == pytest.approx(5.0)
    assert tracker.computations == 3
    assert tracker.utility(both, T0 + timedelta(seconds=120)) == pytest.approx(20.0)
    assert tracker.computations == 4


def test_tracker_rejects_a_non_positive_step() -> None:
    with pytest.raises(ValueError, match="step_s"):
        OracleTracker(FakeWorld({}, capacity=1), step_s=0)
