"""How many changes of its executors a job has left (``henge`` with ``changes_per_day``).

Each job's changes are rationed by a token bucket: it holds at most ``burst`` changes, spends
one on each change of its executor count (a revert too), and earns them back at
``changes_per_day`` a day. Over a long run a job changes at most that many times a day on
average, and never more than ``burst`` times in a row without earning more. A job with less than
one change left is held where it is: the solver is offered no count but the one it holds, and it
gives nothing back, so the changes it has are spent where the models say they gain more than
they cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

DAY_S = 86_400.0


class Budget(NamedTuple):
    left: float
    """Changes the job had left at ``at_s`` (below 0 after a revert it could not afford)."""
    at_s: float
    """When (epoch seconds)."""


def changes_left(budget: Budget | None, now_s: float, per_day: float, burst: float) -> float:
    """The changes a job with ``budget`` has at ``now_s``: a job never changed has ``burst``."""
    if budget is None:
        return burst
    earned = max(0.0, now_s - budget.at_s) * per_day / DAY_S
    return min(burst, budget.left + earned)


def wait_s(budget: Budget | None, now_s: float, per_day: float, burst: float) -> float:
    """Seconds until a job with ``budget`` has a whole change again (0 when it has one)."""
    short = 1.0 - changes_left(budget, now_s, per_day, burst)
    return max(0.0, short) * DAY_S / per_day


def spend(
    budgets: Mapping[str, Budget],
    job_ids: Iterable[str],
    now_s: float,
    per_day: float,
    burst: float,
) -> dict[str, Budget]:
    """``budgets`` with one change spent by each of ``job_ids`` at ``now_s``."""
    spent = dict(budgets)
    for job_id in job_ids:
        left = changes_left(spent.get(job_id), now_s, per_day, burst)
        spent[job_id] = Budget(left - 1.0, now_s)
    return spent
