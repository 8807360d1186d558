"""What a change of a job's executors costs it, read from what followed its earlier changes
(``henge`` only).

A change is not free: new executors take time to start, and a stateful job reloads its state onto
the executors it runs after a change, stalling its batches meanwhile, then works off the backlog
the stall left. Each job's cost is measured from its own history. Every change opens a
*transient*: the job's utility (as a fraction of its priority) is followed each round until the
job has settled (the policy tells: it has run the executors it was given for a whole window of
its metrics and a batch, completing batches, and has no backlog left to work off) or for at most
``cap_s``. The change's cost is its *dip*, in
fraction-of-priority seconds: the utility it lost below the higher of its level before the change
and what its model predicts on its path (its window moving from the old executors to the new at
the input of each moment), or, for a job without a trusted model, below both the level it had
before the change and the level it settled at. The dips and the times to settle are moving
averages over the job's changes.

A change has two parts. First the job stalls: its executors start and its state reloads, and it
completes no batch on them. Then, once batches complete on the new executors, it may still work
off the backlog the stall left. A job whose windows hold only batches after the stall has
*recovered* (:func:`recovering`): what it earns tells again what its executors are worth (a job
draining a backlog faster than its input counts as helped), though its cost is still being
measured until it has settled.

The policy charges every count other than the one a job holds its priority times its dip over
the time the new allocation is expected to hold (see :func:`charge`; while the first change of a
job is followed, the dip it has had so far), takes nothing from a job that has not recovered
since its last change (and leaves it where it is when it may keep state), and before it judges
a move waits for the moved jobs to recover, for their usual time to settle at most (a stall it
expected is no sign that the move failed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


class Transient(NamedTuple):
    """A change being followed."""

    started_s: float
    """When the change was made (epoch seconds)."""
    before: float
    """The job's utility fraction before the change."""
    ran: int
    """The executors it ran before the change."""
    running_s: float | None
    """When the job was first seen running its new executors (epoch seconds)."""
    samples: tuple[tuple[float, float, float], ...]
    """(seconds since the change, utility fraction, expected fraction) of each round since,
    oldest first; the expected fraction is what the job's model predicts at its new executors
    and its input of the moment, or -1 without a trusted model."""
    clear_s: float | None = None
    """From when the job's metrics window holds only batches after its stall (epoch seconds): a
    window after the first round whose window, wholly on the new executors, held completed
    batches."""


class ChangeCost(NamedTuple):
    dip_s: float | None
    """Moving average of the dip after a change: fraction-of-priority seconds lost."""
    settle_s: float | None
    """Moving average of the time from a change until the job settled."""
    changes: int
    """Changes measured."""
    open: Transient | None
    """The change being followed, if any."""


NONE = ChangeCost(None, None, 0, None)


class Flow(NamedTuple):
    """How a job's batches flow in a round whose window holds completed batches."""

    quiet_s: float
    """How long after its new executors run its window holds only batches begun on them (its
    window and a batch)."""
    window_s: float
    """The length of its metrics window."""
    draining: bool
    """Whether it works off a backlog."""


def begin(
    cost: ChangeCost | None, now_s: float, fraction: float, ran: int, alpha: float
) -> ChangeCost:
    """``cost`` with a change made at ``now_s`` to a job at utility ``fraction`` running ``ran``
    executors. A change still being followed is folded in as it stands, its dip so far counted
    below its level before (cut short, a job changed again and again would never count the
    stalls it keeps having)."""
    cost = cost or NONE
    if cost.open is not None and cost.open.samples:
        cost = _fold(cost, None, None, alpha)
    return cost._replace(open=Transient(now_s, fraction, ran, None, (), None))


def observe(
    cost: ChangeCost,
    now_s: float,
    fraction: float,
    expected: float | None,
    running: bool,
    flow: Flow | None,
    alpha: float,
    cap_s: float,
) -> ChangeCost:
    """``cost`` with the round at ``now_s``: the open change's newest utility ``fraction``, the
    fraction ``expected`` of the job now (``None`` when no model can say), whether it runs its
    new executors, and how its batches flow (``None`` when its window holds no completed batch,
    a stall). The job has settled once it has run them for ``flow.quiet_s`` (its metrics' window
    and a batch: none of its batches began before) without a backlog to work off. The change is
    folded in once it has settled or ``cap_s`` has passed (its time to settle then counted as
    ``cap_s``)."""
    opened = cost.open
    if opened is None:
        return cost
    elapsed = now_s - opened.started_s
    if elapsed <= 0:
        return cost
    running_s = opened.running_s
    if running_s is None and running:
        running_s = now_s
    steady = _steady(flow, running_s, now_s)
    clear_s = opened.clear_s
    if clear_s is None and steady is not None:
        clear_s = now_s + steady.window_s
    sample = (elapsed, fraction, -1.0 if expected is None else expected)
    opened = opened._replace(
        running_s=running_s, samples=(*opened.samples, sample), clear_s=clear_s
    )
    cost = cost._replace(open=opened)
    if steady is not None and not steady.draining:
        return _fold(cost, fraction, elapsed, alpha)
    if elapsed >= cap_s:
        return _fold(cost, None, elapsed, alpha)
    return cost


def _steady(flow: Flow | None, running_s: float | None, now_s: float) -> Flow | None:
    """``flow`` once the job has run its new executors (since ``running_s``) for ``quiet_s``:
    before that its window may still hold batches of the old ones."""
    if flow is None or running_s is None or now_s - running_s < flow.quiet_s:
        return None
    return flow


def recovering(cost: ChangeCost | None, now_s: float) -> bool:
    """Whether the job's change is followed and its window may still hold the stall."""
    opened = cost.open if cost is not None else None
    return opened is not None and (opened.clear_s is None or now_s < opened.clear_s)


def _fold(cost: ChangeCost, end: float | None, settle: float | None, alpha: float) -> ChangeCost:
    """The open change's dip averaged in: below both its level before and ``end``, the level it
    settled at (a level it was meant to drop to, when it gave executors away, is no loss), or
    below its level before alone when it did not settle."""
    opened = cost.open
    assert opened is not None
    dip = dip_of(opened, opened.before if end is None else end)
    settle_s = cost.settle_s
    if settle is not None:
        settle_s = settle if settle_s is None else settle_s + alpha * (settle - settle_s)
    dip_s = dip if cost.dip_s is None else cost.dip_s + alpha * (dip - cost.dip_s)
    return ChangeCost(dip_s, settle_s, cost.changes + 1, None)


def dip_of(transient: Transient, end: float) -> float:
    """Fraction-of-priority seconds the samples spent below what was expected of the job (each
    sample standing for the time since the one before it): below the higher of its level
    before and its model's prediction on its path (a model fitted on stalled batches predicts
    little, and would hide the stall), or without a model below both the level before and
    ``end``. A job cut below its SLO thus counts its drop too: it piles up rows meanwhile, which
    it must work off once it grows back (counted below its model's path alone, such cuts look
    cheap, are made more often, and lose on stateful jobs)."""
    level = min(transient.before, end)
    lost = 0.0
    last = 0.0
    for at, fraction, expected in transient.samples:
        floor = level if expected < 0 else max(expected, transient.before)
        if fraction < floor:
            lost += (at - last) * (floor - fraction)
        last = at
    return lost


def charge(cost: ChangeCost | None, priority: float, hold_s: float) -> float:
    """Utility per second a change of the job costs when its new allocation holds ``hold_s``:
    its measured dip, or while its first change is followed the dip that change has had so far
    (0 before any)."""
    if cost is None or hold_s <= 0:
        return 0.0
    dip = cost.dip_s
    if dip is None and cost.open is not None:
        dip = dip_of(cost.open, cost.open.before)
    return priority * dip / hold_s if dip else 0.0


def dump_cost(cost: ChangeCost) -> list[Any]:
    opened = cost.open
    return [
        cost.dip_s,
        cost.settle_s,
        cost.changes,
        None
        if opened is None
        else [
            opened.started_s,
            opened.before,
            opened.ran,
            opened.running_s,
            [list(s) for s in opened.samples],
            opened.clear_s,
        ],
    ]


def costs_from_json(data: Mapping[str, Any] | None) -> dict[str, ChangeCost]:
    """Per-job records from their stored form (each as :func:`dump_cost` gives it)."""
    result: dict[str, ChangeCost] = {}
    for key, value in (data or {}).items():
        raw = value[3]
        opened = (
            None
            if raw is None
            else Transient(
                float(raw[0]),
                float(raw[1]),
                int(raw[2]),
                None if raw[3] is None else float(raw[3]),
                tuple((float(t), float(f), float(e)) for t, f, e in raw[4]),
                None if len(raw) < 6 or raw[5] is None else float(raw[5]),
            )
        )
        result[str(key)] = ChangeCost(
            None if value[0] is None else float(value[0]),
            None if value[1] is None else float(value[1]),
            int(value[2]),
            opened,
        )
    return result
