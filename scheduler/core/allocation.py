"""The allocation solver: given each job's utility at each executor count, choose one count per
job that maximises the total utility while the executors' cores fit in the cluster.

That is a multiple-choice knapsack over integer cores, solved exactly by dynamic programming;
a greedy by marginal utility per core takes over when the table would be huge. The simulator's
oracle (true curves) and the ``henge`` policy (learned curves) use the same solver.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from typing import NamedTuple

DEFAULT_MAX_DP_CELLS = 4_000_000
"""Above this many table updates ((spare cores + 1) × choices, summed over the jobs) the solver
uses the greedy instead of the exact dynamic program."""


class JobChoices(NamedTuple):
    """A job's useful executor counts: the smallest allowed one, then every count at which its
    true utility strictly increases. ``points`` holds ``(executors, cores, utility)``, cores and
    utility both rising; cores are counted in the solver's unit (the greatest common divisor of
    the jobs' cores per executor)."""

    name: str
    points: tuple[tuple[int, int, float], ...]


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
    import numpy as np  # loaded on first solve, not when the core is imported

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
    # A plain function, not a closure: a closure over the heap would make a reference cycle
    # that holds every job's choices until the cyclic garbage collector runs.
    heap: list[tuple[float, int, int]] = []
    for j, job in enumerate(choices):
        entry = _best_upgrade(job.points, 0, j, left)
        if entry is not None:
            heap.append(entry)
    heapq.heapify(heap)  # (the same entries as pushing each: pops come in the same order)
    while heap:
        _, j, index = heapq.heappop(heap)
        if index <= chosen[j]:
            continue
        points = choices[j].points
        extra = points[index][1] - points[chosen[j]][1]
        if extra <= left:
            chosen[j] = index
            left -= extra
        entry = _best_upgrade(points, chosen[j], j, left)
        if entry is not None:
            heapq.heappush(heap, entry)
    total = sum(job.points[i][2] for job, i in zip(choices, chosen, strict=True))
    return total, chosen


def _best_upgrade(
    points: tuple[tuple[int, int, float], ...], at: int, j: int, left: int
) -> tuple[float, int, int] | None:
    """The heap entry of job ``j``'s best upgrade from its point ``at`` that fits in ``left``
    cores, if any."""
    _, cores_now, utility_now = points[at]
    best: tuple[float, int] | None = None
    for index in range(at + 1, len(points)):
        _, cores, value = points[index]
        extra = cores - cores_now
        if extra > left:
            break
        ratio = (value - utility_now) / extra if extra > 0 else math.inf
        if best is None or ratio > best[0]:
            best = (ratio, index)
    return None if best is None else (-best[0], j, best[1])


def solve_choices(
    choices: Sequence[JobChoices], spare: int, max_dp_cells: int = DEFAULT_MAX_DP_CELLS
) -> tuple[float, list[int], str]:
    """The best total utility, each job's chosen point and the method (``"dp"`` or
    ``"greedy"``) for ``spare`` cores above every job's lowest point."""
    cells = (spare + 1) * sum(len(job.points) - 1 for job in choices)
    if cells > max_dp_cells:
        total, chosen = greedy_allocation(choices, spare)
        return total, chosen, "greedy"
    total, chosen = dp_allocation(choices, spare)
    return total, chosen, "dp"
