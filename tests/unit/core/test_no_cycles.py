"""A decision makes no reference cycles: what it discards is freed by reference counting, so a
round may pause Python's cyclic garbage collector around it (``scheduler.round.deciding``)."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest

from scheduler.bench.overhead import _warm_state, synthetic_snapshot
from scheduler.core.allocation import JobChoices, solve_choices
from scheduler.core.decide import CoreSettings, decide
from scheduler.core.policies.registry import available_policies


def _cyclic_garbage(call: Callable[[], object]) -> int:
    """How many objects ``call`` left in reference cycles, found by a full collection."""
    gc.collect()
    gc.disable()
    try:
        call()
        return gc.collect()
    finally:
        gc.enable()


@pytest.mark.parametrize("policy", available_policies())
def test_a_round_of_every_policy_leaves_no_cycles(policy: str) -> None:
    settings = CoreSettings(policy=policy)
    snapshot, state = _warm_state(synthetic_snapshot(300, seed=3), settings)
    now = snapshot.taken_at
    decide(snapshot, state, settings, now)  # anything loaded on first use is loaded now
    assert _cyclic_garbage(lambda: decide(snapshot, state, settings, now)) == 0


@pytest.mark.parametrize("max_dp_cells", [0, 10**9], ids=["greedy", "exact"])
def test_the_solver_leaves_no_cycles(max_dp_cells: int) -> None:
    choices = [
        JobChoices(f"job-{i}", ((1, 1, 0.1), (2, 2, 0.5 + i / 100), (4, 4, 0.9 + i / 100)))
        for i in range(50)
    ]
    solve_choices(choices, 60, max_dp_cells)  # numpy is imported on the first exact solve

    _, chosen, method = solve_choices(choices, 60, max_dp_cells)
    assert method == ("greedy" if max_dp_cells == 0 else "dp")
    assert sum(choices[j].points[i][1] - 1 for j, i in enumerate(chosen)) <= 60
    assert _cyclic_garbage(lambda: solve_choices(choices, 60, max_dp_cells)) == 0
