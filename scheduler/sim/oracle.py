"""The oracle: the highest total utility the cluster could reach now, knowing the true job models.

Given the jobs present, their true utility curves (``World.true_utility``) and the cores of the
ready nodes (``World.capacity_cores``), the oracle picks an executor count for every job, between
its minimum and its maximum, that maximizes the sum of utilities while the executors' cores fit
in the cluster: the multiple-choice knapsack of :mod:`scheduler.core.allocation`.

Per-node packing is ignored: the cluster is one pool of cores. No placement can do better than
the pool, so the exact oracle is an upper bound of what any scheduler can reach (the greedy
fallback is not; see :func:`greedy_allocation`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from statistics import fmean

from scheduler.core.allocation import (
    DEFAULT_MAX_DP_CELLS,
    JobChoices,
    solve_choices,
    useful_points,
)
from scheduler.sim.types import SimJobSpec, World

DEFAULT_STEP_S = 60.0


@dataclass(frozen=True)
class OracleSolution:
    utility: float
    executors: dict[str, int]
    method: str
    """``"dp"`` (exact), ``"greedy"`` (fallback) or ``"empty"`` (no jobs)."""
    capacity_cores: int


def solve(
    world: World,
    specs_present: Sequence[SimJobSpec],
    now: datetime,
    *,
    max_dp_cells: int = DEFAULT_MAX_DP_CELLS,
    times: Sequence[datetime] = (),
    expected: bool = False,
    capacity_cores: float | None = None,
) -> OracleSolution:
    """The oracle's allocation at ``now`` (see the module docstring).

    Every job may hold between its minimum and maximum executors. When even the minimums do not
    fit in the cluster, no allocation respects them (the cluster would leave executors pending),
    so the oracle then lets each job go as low as zero executors, which earn no utility.

    ``times`` (default: ``now`` alone) values each count at the job's lowest true utility over
    those moments: the allocation that holds up over a stretch of input, not one instant's.
    ``expected`` values it at its mean true utility over them instead: the allocation worth
    most on average over that input. ``capacity_cores`` (default: the world's ready cores at
    ``now``) asks what the oracle would do with other cores.
    """
    cores = world.capacity_cores(now) if capacity_cores is None else capacity_cores
    capacity = max(0, math.floor(cores + 1e-9))
    if not specs_present:
        return OracleSolution(0.0, {}, "empty", capacity)
    minimum_cores = sum(s.min_executors * s.cores_per_executor for s in specs_present)
    relax = minimum_cores > capacity
    unit = reduce(math.gcd, (s.cores_per_executor for s in specs_present)) or 1
    units = capacity // unit
    moments = tuple(times) or (now,)
    choices = [
        _choices(world, spec, moments, units, unit, relax, expected) for spec in specs_present
    ]
    spare = units - sum(job.points[0][1] for job in choices)
    total, chosen, method = solve_choices(choices, spare, max_dp_cells)
    executors = {job.name: job.points[i][0] for job, i in zip(choices, chosen, strict=True)}
    return OracleSolution(total, executors, method, capacity)


def _choices(
    world: World,
    spec: SimJobSpec,
    times: Sequence[datetime],
    units: int,
    unit: int,
    relax: bool,
    expected: bool,
) -> JobChoices:
    lowest = 0 if relax else spec.min_executors
    per_executor = spec.cores_per_executor // unit
    combine = fmean if expected else min
    utility_at = [
        combine([world.true_utility(spec.name, e, t) for t in times]) if e > 0 else 0.0
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
        self._jobs: Mapping[str, float] = {}

    def utility(self, specs_present: Sequence[SimJobSpec], now: datetime) -> float:
        self._refresh(specs_present, now)
        return self._value

    def job_utilities(
        self, specs_present: Sequence[SimJobSpec], now: datetime
    ) -> Mapping[str, float]:
        """Each present job's true utility in the oracle's allocation (same bucket rule)."""
        self._refresh(specs_present, now)
        return self._jobs

    def _refresh(self, specs_present: Sequence[SimJobSpec], now: datetime) -> None:
        bucket = math.floor((now - self.world.start).total_seconds() / self.step_s)
        key = (bucket, tuple(sorted(s.name for s in specs_present)))
        if key == self._key:
            return
        solution = solve(self.world, specs_present, now, max_dp_cells=self.max_dp_cells)
        self._value = solution.utility
        self._jobs = {
            name: self.world.true_utility(name, count, now) if count > 0 else 0.0
            for name, count in solution.executors.items()
        }
        self._key = key
        self.computations += 1
