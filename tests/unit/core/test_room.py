"""Room for growth: each executor whole on one node, and the safety clamp that uses it."""

from __future__ import annotations

from scheduler.core.cluster import Room
from scheduler.core.decide import CoreSettings, SchedulerState, decide
from scheduler.core.model import ActionKind, Change, ClusterView, NodeView, Snapshot
from scheduler.core.safety import clamp_changes

from .henge_builders import T0, job


def nodes(*free: float, cores: float = 8.0) -> ClusterView:
    return ClusterView(
        tuple(
            NodeView(f"n{k}", cores, 1 << 20, cores_requested=cores - room)
            for k, room in enumerate(free)
        )
    )


def test_an_executor_needs_its_cores_on_one_node() -> None:
    room = Room(nodes(1.0, 1.0, 1.0, 1.0))  # 4 free cores, but 1 per node
    assert room.free_cores == 4.0
    assert room.take(1, cores=2.0) == 0
    assert room.take(3, cores=1.0) == 3


def test_the_fullest_node_is_used_first_so_a_large_executor_still_fits_later() -> None:
    room = Room(nodes(2.0, 4.0))
    assert room.take(2, cores=1.0) == 2  # both on the 2-core node
    assert room.take(1, cores=4.0) == 1


def test_a_node_too_small_for_one_size_still_takes_a_smaller_one_later() -> None:
    room = Room(nodes(1.0, 3.0, 2.0))
    assert room.take(2, cores=2.0) == 2  # the 2-core node, then the 3-core one (1 left)
    assert room.take(1, cores=2.0) == 0  # no node holds two cores any more
    assert room.take(3, cores=1.0) == 2  # but the two single cores are still there
    assert room.free_cores == 0.0


def test_cores_freed_by_shrinking_executors_fund_growth_after_the_nodes() -> None:
    room = Room(nodes(0.0, 0.0))
    assert room.take(1, cores=2.0) == 0
    room.release(3, cores=1.0)
    assert room.take(2, cores=2.0) == 1  # 3 freed cores: one 2-core executor


def test_a_revert_that_fits_in_total_cores_but_on_no_node_is_clamped() -> None:
    big = job("big", executors=1, cores=4, max_executors=8)
    change = Change("big", 1, 3, "revert")
    # 4 nodes with 2 free cores each: 8 free cores in total, no room for a 4-core executor.
    assert clamp_changes([change], {"big": big}, nodes(2.0, 2.0, 2.0, 2.0)) == ()
    clamped = clamp_changes([change], {"big": big}, nodes(4.0, 2.0, 2.0, 2.0))
    assert [c.to_executors for c in clamped] == [2]


def test_a_job_below_a_raised_minimum_is_raised_only_as_far_as_there_is_room() -> None:
    low = job("low", executors=2, min_executors=6, max_executors=10)
    change = Change("low", 2, 6, "raise to the minimum")
    clamped = clamp_changes([change], {"low": low}, nodes(1.0, 1.0))
    assert [c.to_executors for c in clamped] == [4]
    assert clamp_changes([change], {"low": low}, nodes(0.0, 0.0)) == ()


def test_a_round_raises_a_job_to_a_new_minimum_as_far_as_there_is_room() -> None:
    settings = CoreSettings(policy="static")  # a policy that never moves anything itself
    low = job("low", executors=2, min_executors=6, max_executors=10)
    snap = Snapshot(round_number=1, jobs=(low,), cluster=nodes(1.0, 2.0), taken_at=T0)
    plan, _ = decide(snap, SchedulerState.initial(settings), settings, T0)
    assert [(c.from_executors, c.to_executors) for c in plan.changes] == [(2, 5)]
    assert plan.action is ActionKind.RECONFIGURE
