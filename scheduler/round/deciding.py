"""``decide()`` as a round calls it: with Python's cyclic garbage collector paused.

At 10,000 jobs one decision allocates about 100,000 objects that the collector tracks. With the
collector running, every few hundred of them start a collection of the young objects, and the
older generations' collections walk every object the process holds (the snapshot's jobs and the
state among them): about a third of the decision's time (``henge bench overhead``). The core
makes no reference cycles (``tests/unit/core/test_no_cycles.py``), so what a decision discards
is freed by reference counting as it goes, and the collector, resumed after the call, has
nothing of it to find.
"""

from __future__ import annotations

import gc
from datetime import datetime

from scheduler.core.decide import CoreSettings, SchedulerState, decide
from scheduler.core.model import Plan, Snapshot


def decide_paused(
    snapshot: Snapshot, state: SchedulerState, settings: CoreSettings, now: datetime
) -> tuple[Plan, SchedulerState]:
    """:func:`~scheduler.core.decide.decide` with the cyclic garbage collector paused for the
    call (resumed after it, unless it was paused already)."""
    running = gc.isenabled()
    gc.disable()
    try:
        return decide(snapshot, state, settings, now)
    finally:
        if running:
            gc.enable()
