"""The oracle: the highest total utility the cluster could reach now, knowing the true job models.

Given the jobs present, their true utility curves (``World.true_utility``) and the cores of the
ready nodes (``World.capacity_cores``), the oracle picks an executor count for every job, between
its minimum and its maximum, that maximizes the sum of utilities while the executors' cores fit
in the cluster. That is a multiple-choice knapsack, solved exactly by dynamic programming over
integer cores; a greedy by marginal utility per core takes over when the table would be huge.

Per-node packing is ignored: the cluster is one pool of cores. No placement can do better than
the pool, so the exact oracle is an upper bound of what any scheduler can reach (the greedy
fallback is not; see :func:`greedy_allocation`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce

from scheduler.sim.types import SimJobSpec, World

DEFAULT_MAX_DP_CELLS = 4_000_000
"""Above this many table updates ((spare cores + 1) × choices, summed over the jobs) the oracle
uses the greedy instead of the exact dynamic program."""

DEFAULT_STEP_S = 60.0


@dataclass(frozen=True)
class JobChoices:
    """A job's useful executor counts: the smallest allowed one, then every count at which its
    true utility strictly increases. ``points`` holds ``(executors, cores, utility)``, cores and
    utility both rising; cores are counted in the solver's unit (the greatest common divisor of
    the jobs' cores per executor)."""

    name: str
    points: tuple[tuple[int, int, float], ...]


@dataclass(frozen=True)
class OracleSolution:
    utility: float
    executors: dict[str, int]
    method: str
    """``"dp"`` (exact), ``"greedy"`` (fallback) or ``"empty"`` (no jobs)."""
    capacity_cores: int


def useful_points(
    name: str,
    utility_at: Sequence[float],
    lowest: int,
    cores_per_executor: int,
    capacity: int,
) -> JobChoices:
    """Prune a job's curve to its useful points.

    ``utility_at[i]`` is the utility with ``lowest + i`` executors. A count whose utility does
    not beat every cheaper count is dominated (more cores for no more utility) and dropped, as
    is any count that needs more than ``capacity`` cores. The lowest count is always kept.
    """
    points: list[tuple[int, int, float]] = []
    best = -math.inf
    for offset, value in enumerate(utility_at):
        executors = lowest + offset
        cores = executors * cores_per_executor
        if points and cores > capacity:
            break
        if value > best:
            points.append((executors, cores, value))
            best = value
    return JobChoices(name, tuple(points))


def dp_allocation(choices: Sequence[JobChoices], spare: int) -> tuple[float, list[int]]:
    """Exact multiple-choice knapsack over the cores above every job's lowest point.

    Returns the best total utility and, per job, the index of its chosen point. ``spare`` is the
    capacity left after every job holds its lowest point (must be >= 0). Runs in
    O(jobs × spare × choices); scaling cores by their common divisor is the caller's business.
    """
    import numpy as np  # only the oracle needs it; keep the import off the module's import path

    base = sum(job.points[0][2] for job in choices)
    # tables[j][c]: the highest utility gain of the first j jobs with at most c extra cores.
    # One vectorised max per upgrade instead of a Python loop over cores.
    tables = [np.zeros(spare + 1)]
    for job in choices:
        best = tables[-1]
        new = best.copy()
        for extra, gain in _upgrades(job):
            if extra > spare:
                break
            np.maximum(new[extra:], best[: spare + 1 - extra] + gain, out=new[extra:])
        tables.append(new)
    chosen = [0] * len(choices)
    left = spare
    for j in range(len(choices) - 1, -1, -1):
        target, before = tables[j + 1][left], tables[j]
        if before[left] == target:
            continue
        for index, (extra, gain) in enumerate(_upgrades(choices[j]), start=1):
            if extra <= left and before[left - extra] + gain == target:
                chosen[j] = index
                left -= extra
                break
    return base + float(tables[-1][spare]), chosen


def _upgrades(job: JobChoices) -> list[tuple[int, float]]:
    """(extra cores, utility gain) of each point above the job's lowest one."""
    _, cores0, utility0 = job.points[0]
    return [(cores - cores0, value - utility0) for _, cores, value in job.points[1:]]


def greedy_allocation(choices: Sequence[JobChoices], spare: int) -> tuple[float, list[int]]:
    """Greedy by marginal utility per core: repeatedly apply, among all jobs, the upgrade to a
    higher useful point with the best utility gain per extra core that still fits.

    Exact when every curve is concave and the last upgrade fits exactly; otherwise a feasible
    allocation, so a lower bound of the exact optimum (it may leave cores idle that a different
    combination would use). O(P log P) for P useful points in all, plus rescans of a job's points
    when its best upgrade stops fitting.
    """
    chosen = [0] * len(choices)
    left = spare
    heap: list[tuple[float, int, int]] = []

    def push_best(j: int) -> None:
        points = choices[j].points
        _, cores_now, utility_now = points[chosen[j]]
        best: tuple[float, int] | None = None
        for index in range(chosen[j] + 1, len(points)):
            _, cores, value = points[index]
            extra = cores - cores_now
            if extra > left:
                break
            ratio = (value - utility_now) / extra if extra > 0 else math.inf
            if best is None or ratio > best[0]:
                best = (ratio, index)
        if best is not None:
            heapq.heappush(heap, (-best[0], j, best[1]))

    for j in range(len(choices)):
        push_best(j)
    while heap:
        _, j, index = heapq.heappop(heap)
        if index <= chosen[j]:
            continue
        extra = choices[j].points[index][1] - choices[j].points[chosen[j]][1]
        if extra > left:
            push_best(j)
            continue
        chosen[j] = index
        left -= extra
        push_best(j)
    total = sum(job.points[i][2] for job, i in zip(choices, chosen, strict=True))
    return total, chosen


def solve(
    world: World,
    specs_present: Sequence[SimJobSpec],
    now: datetime,
    *,
    max_dp_cells: int = DEFAULT_MAX_DP_CELLS,
) -> OracleSolution:
    """The oracle's allocation at ``now`` (see the module docstring).

    Every job may hold between its minimum and maximum executors. When even the minimums do not
    fit in the cluster, no allocation respects them (the cluster would leave executors pending),
    so the oracle then lets each job go as low as zero executors, which earn no utility.
    """
    capacity = max(0, math.floor(world.capacity_cores(now) + 1e-9))
    if not specs_present:
        return OracleSolution(0.0, {}, "empty", capacity)
    minimum_cores = sum(s.min_executors * s.cores_per_executor for s in specs_present)
    relax = minimum_cores > capacity
    unit = reduce(math.gcd, (s.cores_per_executor for s in specs_present)) or 1
    units = capacity // unit
    choices = [_choices(world, spec, now, units, unit, relax) for spec in specs_present]
    spare = units - sum(job.points[0][1] for job in choices)
    cells = (spare + 1) * sum(len(job.points) - 1 for job in choices)
    if cells > max_dp_cells:
        total, chosen = greedy_allocation(choices, spare)
        method = "greedy"
    else:
        total, chosen = dp_allocation(choices, spare)
        method = "dp"
    executors = {job.name: job.points[i][0] for job, i in zip(choices, chosen, strict=True)}
    return OracleSolution(total, executors, method, capacity)


def _choices(
    world: World, spec: SimJobSpec, now: datetime, units: int, unit: int, relax: bool
) -> JobChoices:
    lowest = 0 if relax else spec.min_executors
    per_executor = spec.cores_per_executor // unit
    utility_at = [
        world.true_utility(spec.name, e, now) if e > 0 else 0.0
        for e in range(lowest, max(lowest, spec.max_executors) + 1)
        if e * per_executor <= units or e == lowest
    ]
    return useful_points(spec.name, utility_at, lowest, per_executor, units)


def oracle_utility(
    world: World,
    specs_present: Sequence[SimJobSpec],
    now: datetime,
    *,
    max_dp_cells: int = DEFAULT_MAX_DP_CELLS,
) -> float:
    """The highest total utility reachable at ``now`` (an upper bound: per-node packing is
    ignored). Exact unless the dynamic program would exceed ``max_dp_cells`` updates."""
    return solve(world, specs_present, now, max_dp_cells=max_dp_cells).utility


class OracleTracker:
    """Calls the oracle at most once per ``step_s`` simulated seconds for a given job set, so the
    runner can ask every round. The value is computed at the first ``now`` of each step bucket
    (buckets count from ``world.start``) and reused until the bucket or the set of jobs changes.
    """

    def __init__(
        self,
        world: World,
        step_s: float = DEFAULT_STEP_S,
        *,
        max_dp_cells: int = DEFAULT_MAX_DP_CELLS,
    ) -> None:
        if not step_s > 0:
            raise ValueError("step_s must be > 0")
        self.world = world
        self.step_s = step_s
        self.max_dp_cells = max_dp_cells
        self.computations = 0
        self._key: tuple[int, tuple[str, ...]] | None = None
        self._value = 0.0

    def utility(self, specs_present: Sequence[SimJobSpec], now: datetime) -> float:
        bucket = math.floor((now - self.world.start).total_seconds() / self.step_s)
        key = (bucket, tuple(sorted(s.name for s in specs_present)))
        if key != self._key:
            self._value = oracle_utility(
                self.world, specs_present, now, max_dp_cells=self.max_dp_cells
            )
            self._key = key
            self.computations += 1
        return self._value
