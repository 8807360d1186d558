"""One allocation for every counted job at once, and the move that gets there.

Each job offers a few executor counts with a value (its predicted utility, or what is known of
it; a cut may be charged for the backlog it would build, so a value may be below 0). The
multiple-choice knapsack of :mod:`scheduler.core.allocation` picks one count per job that
maximises the total value within the cores the counted jobs can use (the free cores plus the
cores they hold). Two small credits decide between allocations of equal utility: the count a job
holds now earns the most (nothing moves without a gain), and a growing job's headroom target
earns a little (it grows past the bare need when cores allow). Since a job's utility is capped
by its priority, the solver takes cores from where they cost the least utility per core: the
lowest priority first, and never from a job whose loss outweighs the gain.

The move then grows the jobs that gain, first into free room on the nodes (each executor whole
on one node) and then into the cores the shrinking jobs free, and shrinks only the jobs the
solver took cores from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import NamedTuple

from scheduler.core.allocation import JobChoices, solve_choices
from scheduler.core.cluster import Room
from scheduler.core.model import ClusterView, JobView


class Offer(NamedTuple):
    """What one job offers the solver: (executors, value) pairs, executors rising.

    (A named tuple rather than a frozen dataclass, like the other records made per job and
    round: at 1,000 jobs their construction is a measurable part of a round.)"""

    job: JobView
    points: tuple[tuple[int, float], ...]

    @staticmethod
    def of(job: JobView, points: list[tuple[int, float]]) -> Offer:
        return Offer(job, tuple(sorted(points)))

    def value_at(self, executors: int) -> float:
        """The best value of the points at or below ``executors`` (the lowest point's if none)."""
        best = self.points[0][1]
        for count, value in self.points:
            if count > executors:
                break
            best = max(best, value)
        return best


def solve(offers: Sequence[Offer], free_cores: float) -> dict[str, int] | None:
    """Each job's target in the best allocation within ``free_cores`` and the cores the jobs
    hold, or ``None`` when the jobs' lowest counts do not fit."""
    if not offers:
        return None
    # (a list, not a generator: the module is compiled, and mypyc builds a list anyway)
    unit = reduce(math.gcd, [o.job.cores_per_executor for o in offers]) or 1
    held = fixed = 0
    targets: dict[str, int] = {}
    choices: list[JobChoices] = []
    for offer in offers:  # (one pass: a round offers every job)
        job, lowest = offer.job, offer.points[0][0]
        held += job.executors * job.cores_per_executor
        targets[job.job_id] = lowest
        if len(offer.points) == 1:
            fixed += lowest * job.cores_per_executor  # no choice to make: it only takes its cores
        else:
            choices.append(_choices(offer, unit))
    capacity = math.floor((free_cores + held) / unit + 1e-9)
    spare = capacity - fixed // unit - sum(c.points[0][1] for c in choices)
    if spare < 0:
        return None
    _, chosen, _ = solve_choices(choices, spare)
    targets.update((c.name, c.points[i][0]) for c, i in zip(choices, chosen, strict=True))
    return targets


def _choices(offer: Offer, unit: int) -> JobChoices:
    """The offer's non-dominated points (more cores must earn more), in solver units."""
    per_executor = offer.job.cores_per_executor // unit
    points: list[tuple[int, int, float]] = []
    for executors, value in offer.points:
        if points and value <= points[-1][2]:
            continue
        points.append((executors, executors * per_executor, value))
    return JobChoices(offer.job.job_id, tuple(points))


class Step(NamedTuple):
    """One job's part of a move."""

    job: JobView
    target: int


class Placement(NamedTuple):
    """The steps toward an allocation that the nodes can place, and what placing them found."""

    steps: list[Step]
    took: float
    """Free cores of the nodes the growth took."""
    short: float
    """Cores of the growth for which no node had room."""


def move_toward(
    targets: Mapping[str, int], jobs: Sequence[JobView], cluster: ClusterView
) -> Placement:
    """The steps toward ``targets`` that fit: shrinks as the solver chose them, growth by
    priority (highest first) as far as the room allows (:class:`~scheduler.core.cluster.Room`)."""
    room = Room(cluster)
    on_nodes = room.cores_on_nodes
    steps: list[Step] = []
    for job in jobs:
        target = targets.get(job.job_id, job.executors)
        if target < job.executors:
            room.release(job.executors - target, job.cores_per_executor, job.memory_mb)
            steps.append(Step(job, target))
    growing = sorted(
        (j for j in jobs if targets.get(j.job_id, j.executors) > j.executors),
        key=lambda j: (-j.priority, j.job_id),
    )
    short = 0.0
    for job in growing:
        wanted = targets[job.job_id] - job.executors
        more = room.take(wanted, job.cores_per_executor, job.memory_mb)
        if more > 0:
            steps.append(Step(job, job.executors + more))
        short += (wanted - more) * job.cores_per_executor
    return Placement(steps, on_nodes - room.cores_on_nodes, short)
