"""Henge's state machine, one or more tests per rule of DESIGN §3 (named after the rule)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from scheduler.core.decide import CoreSettings, SchedulerState, decide
from scheduler.core.model import ActionKind, ClusterState, ClusterView, JobStatus, NodeView
from scheduler.core.policies.henge import (
    PRODUCT_SWITCHES,
    Configuration,
    HengeSettings,
    HengeState,
    LastAction,
    Step,
)
from scheduler.core.policies.henge.state import dump, load

from .henge_builders import T0, apply, at, job, paper, product, run, snapshot, with_utility

# --------------------------------------------------------------------------------------------
# Step 1: freshness (through decide(), where the generic steps live)
# --------------------------------------------------------------------------------------------

HENGE_PAPER = CoreSettings(policy="henge-paper")


@pytest.mark.parametrize(
    ("report_age_s", "has_metrics", "frozen"),
    [
        (29.0, True, False),
        (30.0, True, False),
        (31.0, True, True),
        (None, False, True),  # never reported: warming up
    ],
)
def test_freshness_freezes_stale_jobs(
    report_age_s: float | None, has_metrics: bool, frozen: bool
) -> None:
    reported = None if report_age_s is None else T0 - timedelta(seconds=report_age_s)
    x = job("x", utility=1.0, capacity=0.9, reported_at=reported, with_metrics=has_metrics)
    others = [job("a"), job("b"), job("c")]
    snap = snapshot([x, *others])
    plan, _ = decide(snap, SchedulerState.initial(HENGE_PAPER), HENGE_PAPER, T0)
    assert ("x" in plan.frozen_jobs) is frozen
    touched = {c.job_id for c in plan.changes}
    if frozen:
        # Not touched and not counted: the others all meet their SLOs, so nothing happens.
        assert touched == set()
        assert plan.max_utility == 30.0
        assert plan.total_utility == 30.0
    else:
        assert touched == {"x"}
        assert plan.max_utility == 40.0


def test_freshness_outage_takes_no_action() -> None:
    old = T0 - timedelta(seconds=120)
    jobs = [
        job("a", utility=1.0, capacity=0.9, reported_at=old),
        job("b", reported_at=old),
        job("c", utility=2.0, capacity=0.9),
    ]
    state = SchedulerState.initial(HENGE_PAPER)
    plan, new_state = decide(snapshot(jobs), state, HENGE_PAPER, T0)
    assert plan.action is ActionKind.NONE
    assert "outage" in plan.reason
    assert plan.changes == ()
    assert new_state.in_outage
    assert new_state.policy_state == state.policy_state  # the policy did not run


@pytest.mark.parametrize(("stale_count", "outage"), [(1, False), (2, False), (3, True)])
def test_freshness_outage_needs_more_than_half_of_the_jobs_stale(
    stale_count: int, outage: bool
) -> None:
    old = T0 - timedelta(seconds=120)
    jobs = [job(n, utility=2.0, capacity=0.9) for n in "abcd"]
    jobs = [replace(j, last_report_at=old) if k < stale_count else j for k, j in enumerate(jobs)]
    plan, new_state = decide(snapshot(jobs), SchedulerState.initial(HENGE_PAPER), HENGE_PAPER, T0)
    assert ("outage" in plan.reason) is outage
    assert new_state.in_outage is outage
    assert (plan.action is ActionKind.NONE) is outage
    assert len(plan.frozen_jobs) == stale_count


def test_freshness_observes_after_outage_before_acting() -> None:
    settings = HENGE_PAPER
    stale = T0 - timedelta(seconds=120)
    jobs = [job("a", utility=1.0, capacity=0.9), job("b"), job("c")]
    outage = [replace(j, last_report_at=stale) for j in jobs[:2]] + jobs[2:]
    _, state = decide(snapshot(outage), SchedulerState.initial(settings), settings, T0)
    assert state.in_outage

    def at_time(seconds: float) -> tuple[ActionKind, str]:
        moment = at(seconds)
        fresh = [replace(j, last_report_at=moment) for j in jobs]
        plan, _ = decide(snapshot(fresh, when=moment), state_after, settings, moment)
        return plan.action, plan.reason

    # The first round after the outage starts the observation period.
    first = [replace(j, last_report_at=at(10)) for j in jobs]
    plan, state_after = decide(snapshot(first, when=at(10)), state, settings, at(10))
    assert plan.action is ActionKind.NONE
    assert "observing" in plan.reason
    assert state_after.observe_until == at(10) + timedelta(seconds=300)
    assert at_time(10 + 299)[0] is ActionKind.NONE
    assert "observing" in at_time(10 + 299)[1]
    assert at_time(10 + 300)[0] is ActionKind.RECONFIGURE


# --------------------------------------------------------------------------------------------
# Step 2: quiesce
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("step", list(Step))
@pytest.mark.parametrize(("elapsed_s", "waits"), [(0, True), (59, True), (60, False)])
def test_quiesce_waits_after_every_action(step: Step, elapsed_s: float, waits: bool) -> None:
    jobs = [job("a", utility=2.0, capacity=0.6), job("b")]
    last = LastAction(step, T0, "a", {"a": 2.0, "b": 10.0}, {"a": 4}, judged=False)
    state = HengeState(last_action=last, history=(), record_due=True)
    plan, new_state = run(paper(), snapshot(jobs, when=at(elapsed_s)), state, at(elapsed_s))
    if waits:
        assert plan.action is ActionKind.NONE
        assert "waiting for quiesce" in plan.reason
        assert new_state.history == ()  # nothing judged or recorded yet
    else:
        assert "waiting for quiesce" not in plan.reason
        assert len(new_state.history) == 1


# --------------------------------------------------------------------------------------------
# Step 3: judge the last reconfiguration
# --------------------------------------------------------------------------------------------


def _judging(
    a_before: float,
    a_after: float,
    *,
    b_utility: float = 10.0,
    reduced: dict[str, float | None] | None = None,
    reduced_jobs: frozenset[str] | None = None,
    **state_args: object,
) -> tuple[list, HengeState]:
    """Jobs and state one quiesce after ``a`` was reconfigured 4→8."""
    jobs = [
        job("a", utility=a_after, executors=8, capacity=0.6),
        job("b", utility=b_utility, capacity=0.5),
        job("c", executors=10, capacity=0.1, input_rate=1000.0),
    ]
    before = {"a": a_before, "b": b_utility, "c": 10.0}
    history = (Configuration(at(-60), {"a": 4, "b": 4, "c": 10}, sum(before.values()), 30.0),)
    state = HengeState(
        last_action=LastAction(Step.RECONFIGURE, T0, "a", before, {"a": 4}, judged=False),
        history=history,
        record_due=True,
        reduced=reduced or {},
        reduced_jobs=reduced_jobs if reduced_jobs is not None else frozenset(),
        **state_args,  # type: ignore[arg-type]
    )
    return jobs, state


@pytest.mark.parametrize(
    ("before", "after", "blacklisted"),
    [
        (2.0, 2.4, True),  # +4 % of the priority, still missing its SLO
        (2.0, 2.6, False),  # +6 %
        (9.8, 10.0, False),  # small gain, but the SLO is now met
        (2.0, 2.0, True),  # no gain at all
    ],
)
def test_judge_blacklists_small_gain(before: float, after: float, blacklisted: bool) -> None:
    jobs, state = _judging(before, after)
    jobs.append(job("d", priority=5.0, utility=1.0, capacity=0.6))
    plan, new_state = run(paper(), snapshot(jobs, when=at(60)), state, at(60))
    assert ("a" in new_state.blacklist) is blacklisted
    if blacklisted:
        assert new_state.blacklist["a"] == at(60 + 3600)
        # The change is kept (no revert) and the next candidate is reconfigured this round.
        assert plan.action is ActionKind.RECONFIGURE
        assert plan.job_id == "d"
        assert "blacklisted" in plan.reason
    elif after < 10.0:
        assert plan.job_id == "a"


@pytest.mark.parametrize(
    ("congested", "some_met", "prior_reduction", "expected"),
    [
        (True, True, False, ActionKind.REDUCE),
        (False, True, False, ActionKind.REVERT),
        (True, False, False, ActionKind.REVERT),
        (True, True, True, ActionKind.REVERT),
        (False, False, True, ActionKind.REVERT),
    ],
)
def test_reduce_requires_congestion_slo_met_and_no_prior_reduction(
    congested: bool, some_met: bool, prior_reduction: bool, expected: ActionKind
) -> None:
    jobs, state = _judging(
        5.0,
        3.0,
        reduced={"c": 1000.0} if prior_reduction else None,
        reduced_jobs=frozenset({"a", "b", "c"}) if prior_reduction else None,
    )
    if not some_met:
        jobs = with_utility(jobs, b=5.0, c=5.0)
        state = replace(
            state,
            last_action=replace(
                state.last_action,  # type: ignore[arg-type]
                utilities_before={"a": 5.0, "b": 5.0, "c": 5.0},
            ),
        )
    snap = snapshot(jobs, free=0.0 if congested else 100.0, when=at(60))
    plan, new_state = run(paper(), snap, state, at(60))
    assert plan.action is expected
    assert "total utility fell" in plan.reason
    if expected is ActionKind.REDUCE:
        assert [(c.job_id, c.to_executors) for c in plan.changes] == [("c", 2)]
        assert new_state.cluster_state is ClusterState.NOT_CONVERGED
    else:
        assert new_state.cluster_state is ClusterState.CONVERGED


_FULL = {"cores_requested": 8.0}  # no room for one more executor
_BUSY = {"cpu_used": 8.0}  # CPU use at its allocatable cores
_IDLE: dict[str, object] = {}


@pytest.mark.parametrize(
    ("node_states", "congested"),
    [
        ((_FULL, _FULL, _IDLE), True),
        ((_BUSY, _BUSY, _IDLE), True),
        ((_BUSY, _FULL, _IDLE), True),
        ((_FULL, _IDLE, _IDLE), False),  # a minority
        ((_FULL, _FULL, _IDLE, _IDLE), False),  # exactly half is no majority
        (({"cpu_used": 7.9}, {"cpu_used": 7.9}, _IDLE), False),  # below its cores
        ((_FULL, {"ready": False}, {"ready": False}), True),  # only ready nodes count
    ],
)
def test_reduce_condition_a_cluster_congested_when_a_majority_of_nodes_are(
    node_states: tuple[dict[str, object], ...], congested: bool
) -> None:
    jobs, state = _judging(5.0, 3.0)
    nodes = tuple(
        NodeView(f"n{k}", 8.0, 1 << 20, **args)  # type: ignore[arg-type]
        for k, args in enumerate(node_states)
    )
    snap = replace(snapshot(jobs, when=at(60)), cluster=ClusterView(nodes))
    plan, _ = run(paper(), snap, state, at(60))
    assert plan.action is (ActionKind.REDUCE if congested else ActionKind.REVERT)
    assert ("cluster not congested" in plan.reason) is not congested


def test_reduce_cuts_slo_meeting_uncongested_jobs_by_fraction() -> None:
    jobs = [
        job("a", utility=3.0, executors=8, capacity=0.6),  # reconfigured, misses its SLO
        job("m", executors=10, capacity=0.1),  # meets, not congested: 10 → 2
        job("k", executors=10, capacity=0.5),  # meets but congested: untouched
        job("x", utility=4.0, executors=10, capacity=0.1),  # misses: untouched
        job("f", executors=10, min_executors=5, capacity=0.2),  # floor at its minimum
        job("n", executors=7, capacity=None),  # capacity unknown: untouched
        job("o", executors=1, capacity=0.1),  # cannot go lower
    ]
    before = {j.job_id: j.utility for j in jobs} | {"a": 5.0}
    state = HengeState(
        last_action=LastAction(Step.RECONFIGURE, T0, "a", before, {"a": 4}, judged=False),
        history=(Configuration(at(-60), {j.job_id: 4 for j in jobs}, 60.0, 70.0),),
    )
    plan, new_state = run(paper(), snapshot(jobs, free=0.0, when=at(60)), state, at(60))
    assert plan.action is ActionKind.REDUCE
    assert {c.job_id: c.to_executors for c in plan.changes} == {"m": 2, "f": 5}
    assert set(new_state.reduced) == {"m", "f"}
    assert new_state.reduced_jobs == frozenset(j.job_id for j in jobs)


@pytest.mark.parametrize(
    ("c_rate", "jobs_now", "marks_cleared"),
    [
        (1000.0, {"a", "b", "c"}, False),  # nothing changed
        (1150.0, {"a", "b", "c"}, False),  # input rate moved 15 % (< 20 %)
        (1250.0, {"a", "b", "c"}, True),  # input rate moved 25 %
        (800.0 - 1.0, {"a", "b", "c"}, True),  # moved down by more than 20 %
        (1000.0, {"a", "b", "c", "gone"}, True),  # the set of jobs changed
    ],
)
def test_reduce_once_per_job_until_external_change(
    c_rate: float, jobs_now: set[str], marks_cleared: bool
) -> None:
    jobs, state = _judging(5.0, 3.0, reduced={"c": 1000.0}, reduced_jobs=frozenset(jobs_now))
    jobs = [replace(j, metrics=replace(j.metrics, input_rate=c_rate)) if j.job_id == "c" else j
            for j in jobs]  # fmt: skip
    plan, new_state = run(paper(), snapshot(jobs, free=0.0, when=at(60)), state, at(60))
    if marks_cleared:
        # (c) holds again: c is reduced a second time, and marked with its new rate.
        assert plan.action is ActionKind.REDUCE
        assert new_state.reduced == {"c": c_rate}
        assert "cleared" in plan.reason
    else:
        assert plan.action is ActionKind.REVERT
        assert "a reduction is in the history" in plan.reason
        assert new_state.reduced == {"c": 1000.0}


@pytest.mark.parametrize(
    ("actions_since_reduce", "fraction_before", "expected"),
    [
        (1, 0.95, ActionKind.REVERT),  # reduce → reconfigure → drop again: lockout
        (1, 0.50, ActionKind.REDUCE),  # the last reduce did help
        (None, None, ActionKind.REDUCE),  # no reduce before
        (2, 0.95, ActionKind.REDUCE),  # not right after a reduce
    ],
)
def test_lockout_turns_second_reduce_into_revert(
    actions_since_reduce: int | None, fraction_before: float | None, expected: ActionKind
) -> None:
    # The reduction mark of the earlier reduce was cleared by an external change, so (c) holds.
    jobs, state = _judging(
        5.0,
        3.0,
        actions_since_reduce=actions_since_reduce,
        reduce_fraction_before=fraction_before,
    )
    plan, _ = run(paper(), snapshot(jobs, free=0.0, when=at(60)), state, at(60))
    assert plan.action is expected
    assert ("lockout" in plan.reason) is (expected is ActionKind.REVERT)


def test_lockout_in_a_full_sequence() -> None:
    """reconfigure → drop → reduce → (rate change clears the mark) → reconfigure → drop → revert."""
    policy = paper()
    jobs, state = _judging(5.0, 3.0)
    jobs.append(job("d", priority=5.0, utility=1.0, capacity=0.6))
    plan, state = run(policy, snapshot(jobs, free=0.0, when=at(60)), state, at(60))
    assert plan.action is ActionKind.REDUCE
    assert "a" in state.blacklist
    jobs = apply(jobs, plan)
    # c's input rate moves by 30 %: its mark is cleared. d misses its SLO; room appeared.
    jobs = [replace(j, metrics=replace(j.metrics, input_rate=1300.0)) if j.job_id == "c" else j
            for j in jobs]  # fmt: skip
    plan, state = run(policy, snapshot(jobs, free=8.0, when=at(120)), state, at(120))
    assert plan.action is ActionKind.RECONFIGURE
    assert plan.job_id == "d"
    assert state.reduced == {}
    jobs = with_utility(apply(jobs, plan), d=0.5)
    plan, state = run(policy, snapshot(jobs, free=0.0, when=at(180)), state, at(180))
    assert plan.action is ActionKind.REVERT
    assert "lockout" in plan.reason
    assert state.cluster_state is ClusterState.CONVERGED


# --------------------------------------------------------------------------------------------
# Step 5: revert
# --------------------------------------------------------------------------------------------


def test_revert_restores_best_configuration() -> None:
    jobs = [
        job("a", utility=4.0, executors=16, capacity=0.6),
        job("b", executors=2),
        job("c", executors=10),
        job("new", executors=3),  # not in any past configuration: left alone
    ]
    history = (
        Configuration(at(-300), {"a": 4, "b": 4, "c": 10}, 20.0, 30.0),
        Configuration(at(-200), {"a": 8, "b": 4, "c": 8}, 27.0, 30.0),
        Configuration(at(-100), {"a": 12, "b": 2, "c": 10}, 25.0, 30.0),
    )
    before = {"a": 5.0, "b": 10.0, "c": 10.0, "new": 10.0}
    state = HengeState(
        last_action=LastAction(Step.RECONFIGURE, T0, "a", before, {"a": 12}, judged=False),
        history=history,
    )
    plan, new_state = run(paper(), snapshot(jobs, when=at(60)), state, at(60))
    assert plan.action is ActionKind.REVERT
    assert {c.job_id: c.to_executors for c in plan.changes} == {"a": 8, "b": 4, "c": 8}
    assert new_state.cluster_state is ClusterState.CONVERGED
    assert plan.state is ClusterState.CONVERGED
    # The configuration that was judged joined the history, which is otherwise kept.
    assert len(new_state.history) == 4


# --------------------------------------------------------------------------------------------
# Step 6: converged
# --------------------------------------------------------------------------------------------


def _converged_state(**extra: object) -> HengeState:
    return HengeState(
        cluster_state=ClusterState.CONVERGED,
        last_action=LastAction(Step.REVERT, at(-600), None),
        history=(Configuration(at(-700), {"a": 4, "b": 4}, 20.0, 20.0),),
        record_due=False,
        reduced={"b": 1000.0},
        reduced_jobs=frozenset({"a", "b"}),
        converged_fraction=1.0,
        converged_jobs=frozenset({"a", "b"}),
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(("a_utility", "leaves"), [(10.0, False), (9.4, False), (8.0, True)])
def test_converged_drop_forgets_history(a_utility: float, leaves: bool) -> None:
    jobs = [job("a", utility=a_utility, capacity=0.6), job("b")]
    state = _converged_state()
    plan, new_state = run(paper(), snapshot(jobs), state, T0)
    if leaves:  # 20 → 18: a 10 % drop
        assert new_state.cluster_state is ClusterState.NOT_CONVERGED
        assert new_state.reduced == {}
        assert [c.allocations for c in new_state.history] == [{"a": 4, "b": 4}]
        assert new_state.history[0].at == T0  # only the configuration just recorded
        assert "history forgotten" in plan.reason
        assert plan.action is ActionKind.RECONFIGURE
    else:  # a drop of 3 % or none: stay while nothing changes
        assert plan.action is ActionKind.NONE
        assert new_state.cluster_state is ClusterState.CONVERGED
        assert new_state.history == state.history
        assert new_state.reduced == state.reduced


def test_converged_captures_reference_after_revert() -> None:
    jobs = [job("a", utility=6.0), job("b")]
    state = replace(_converged_state(), converged_fraction=None, converged_jobs=frozenset())
    plan, new_state = run(paper(), snapshot(jobs), state, T0)
    assert plan.action is ActionKind.NONE
    assert new_state.converged_fraction == pytest.approx(16.0 / 20.0)
    # A further small change is measured against the captured reference.
    jobs = with_utility(jobs, a=5.5)
    plan, again = run(paper(), snapshot(jobs, when=at(10)), new_state, at(10))
    assert again.cluster_state is ClusterState.CONVERGED


def test_settle_rounds_before_converged() -> None:
    policy = paper()
    jobs = [job("a"), job("b")]
    state = policy.initial_state()
    reasons = []
    for k in range(4):
        plan, state = run(policy, snapshot(jobs, when=at(10 * k)), state, at(10 * k))
        assert plan.action is ActionKind.NONE
        reasons.append(plan.reason)
        expected = ClusterState.CONVERGED if k == 3 else ClusterState.NOT_CONVERGED
        assert state.cluster_state is expected
    assert "settling (1/4)" in reasons[0]
    assert "settling (3/4)" in reasons[2]
    assert "converged" in reasons[3]


def test_settle_rounds_restart_when_a_job_slips() -> None:
    policy = paper()
    jobs = [job("a"), job("b")]
    state = policy.initial_state()
    for k in range(3):
        _, state = run(policy, snapshot(jobs, when=at(10 * k)), state, at(10 * k))
    assert state.settle_count == 3
    slipped = with_utility(jobs, a=9.0)
    plan, state = run(policy, snapshot(slipped, when=at(30)), state, at(30))
    assert plan.action is ActionKind.RECONFIGURE
    assert state.settle_count == 0
    assert state.cluster_state is ClusterState.NOT_CONVERGED


# --------------------------------------------------------------------------------------------
# Step 7: reconfigure
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jobs", "blacklisted", "head"),
    [
        ([("a", 10.0, 5.0), ("b", 35.0, 30.0)], (), "b"),  # priority first
        ([("a", 10.0, 2.0), ("b", 10.0, 5.0)], (), "a"),  # then lower utility
        ([("b", 10.0, 5.0), ("a", 10.0, 5.0)], (), "a"),  # then job id (deterministic)
        ([("a", 10.0, 1.0), ("b", 5.0, 1.0)], ("a",), "b"),  # blacklisted skipped
        ([("a", 10.0, 10.0), ("b", 5.0, 1.0)], (), "b"),  # meeting its SLO: not a candidate
    ],
)
def test_reconfigure_orders_by_priority_then_lower_utility(
    jobs: list[tuple[str, float, float]], blacklisted: tuple[str, ...], head: str
) -> None:
    views = [job(n, priority=p, utility=u, capacity=0.6) for n, p, u in jobs]
    state = HengeState(blacklist={b: at(100) for b in blacklisted})
    plan, new_state = run(paper(), snapshot(views), state, T0)
    assert plan.action is ActionKind.RECONFIGURE
    assert plan.job_id == head
    assert [c.job_id for c in plan.changes] == [head]
    assert new_state.last_action is not None
    assert new_state.last_action.step is Step.RECONFIGURE
    assert not new_state.last_action.judged


def test_reconfigure_blacklist_expires() -> None:
    views = [job("a", utility=1.0, capacity=0.6)]
    state = HengeState(blacklist={"a": at(3600)})
    plan, _ = run(paper(), snapshot(views, when=at(3599)), state, at(3599))
    assert plan.action is ActionKind.NONE
    assert "blacklisted" in plan.reason
    plan, new_state = run(paper(), snapshot(views, when=at(3600)), state, at(3600))
    assert plan.action is ActionKind.RECONFIGURE
    assert new_state.blacklist == {}


@pytest.mark.parametrize(
    ("job_args", "free", "target"),
    [
        ({}, 100.0, 14),  # eq. 2.4 at capacity 0.6: +10
        ({"max_executors": 8}, 100.0, 8),  # its max
        ({"max_parallelism": 6}, 100.0, 6),  # useful parallelism: 6 tasks, 1 core each
        ({"max_parallelism": 12, "cores": 4}, 100.0, 4),  # 12 tasks / 4 cores: at its bound
        ({}, 3.0, 7),  # free capacity
        ({"cores": 2}, 5.0, 6),  # two executors of 2 cores fit in 5 free cores
    ],
)
def test_reconfigure_bounded_by_max_useful_parallelism_and_free_capacity(
    job_args: dict[str, int], free: float, target: int
) -> None:
    views = [job("a", utility=2.0, capacity=0.6, **job_args)]  # type: ignore[arg-type]
    plan, _ = run(paper(), snapshot(views, free=free, nodes=1), None, T0)  # free on one node
    if target == 4:
        assert plan.action is ActionKind.NONE
        assert "upper bound" in plan.reason
    else:
        assert plan.action is ActionKind.RECONFIGURE
        assert [(c.from_executors, c.to_executors) for c in plan.changes] == [(4, target)]


def test_reconfigure_without_room_reduces_when_b_and_c_hold() -> None:
    views = [
        job("a", utility=2.0, capacity=0.6, cores=2),
        job("m", executors=10, capacity=0.1),
    ]
    plan, state = run(paper(), snapshot(views, free=1.0), None, T0)
    assert plan.action is ActionKind.REDUCE
    assert "no room for a" in plan.reason
    assert [(c.job_id, c.to_executors) for c in plan.changes] == [("m", 2)]
    assert set(state.reduced) == {"m"}


@pytest.mark.parametrize(
    ("free_per_node", "memory_free_mb", "expected", "target"),
    [
        ((1.0, 1.0, 1.0, 1.0), 1 << 20, ActionKind.REDUCE, None),  # 4 cores, none for a 2-core
        ((3.0, 3.0, 1.0, 1.0), 1 << 20, ActionKind.RECONFIGURE, 6),  # 8 cores, 2 executors
        ((8.0, 8.0, 8.0, 8.0), 512, ActionKind.REDUCE, None),  # cores, but no memory
    ],
)
def test_reconfigure_without_room_counts_an_executor_only_where_it_fits_whole(
    free_per_node: tuple[float, ...],
    memory_free_mb: float,
    expected: ActionKind,
    target: int | None,
) -> None:
    """An executor that fits on no single node stays pending: scattered free cores are no room."""
    views = [
        job("a", utility=2.0, capacity=0.6, cores=2, memory_mb=1024),
        job("m", executors=10, capacity=0.1),
    ]
    nodes = tuple(
        NodeView(f"n{k}", 16.0, 1 << 20, cores_requested=16.0 - free,
                 memory_requested_mb=float((1 << 20) - memory_free_mb))
        for k, free in enumerate(free_per_node)
    )  # fmt: skip
    snap = replace(snapshot(views), cluster=ClusterView(nodes))
    plan, _ = run(paper(), snap, None, T0)
    assert plan.action is expected
    if target is None:
        assert "no room for a" in plan.reason
        assert [(c.job_id, c.to_executors) for c in plan.changes] == [("m", 2)]
    else:
        assert [(c.job_id, c.to_executors) for c in plan.changes] == [("a", target)]


@pytest.mark.parametrize("why", ["prior reduction", "no job meets its SLO"])
def test_reconfigure_without_room_passes_over_to_next_candidate(why: str) -> None:
    views = [
        job("a", priority=20.0, utility=2.0, capacity=0.6, cores=2),
        job("b", utility=2.0, capacity=0.6),
        job("m", executors=10, capacity=0.1, utility=9.0 if why != "prior reduction" else None),
    ]
    state = HengeState()
    if why == "prior reduction":
        state = HengeState(reduced={"m": 1000.0}, reduced_jobs=frozenset({"a", "b", "m"}))
    plan, _ = run(paper(), snapshot(views, free=1.0, nodes=1), state, T0)
    assert plan.action is ActionKind.RECONFIGURE
    assert plan.job_id == "b"
    assert [(c.job_id, c.to_executors) for c in plan.changes] == [("b", 5)]


def test_reconfigure_none_when_no_candidate_can_grow() -> None:
    views = [job("a", utility=2.0, capacity=0.2), job("b", utility=2.0, executors=40)]
    plan, state = run(paper(), snapshot(views), None, T0)
    assert plan.action is ActionKind.NONE
    assert "not congested" in plan.reason
    assert "upper bound" in plan.reason
    assert state.last_action is None


def test_every_round_plan_carries_one_action_with_reason() -> None:
    policy = paper()
    jobs = [job("a", utility=2.0, capacity=0.9), job("b", executors=10, capacity=0.1)]
    state = policy.initial_state()
    seen = []
    for k in range(20):
        plan, state = run(policy, snapshot(jobs, free=20.0, when=at(10 * k)), state, at(10 * k))
        assert isinstance(plan.action, ActionKind)
        assert plan.reason
        assert plan.max_utility == 20.0
        seen.append(plan.action)
        jobs = apply(jobs, plan)
    assert ActionKind.RECONFIGURE in seen
    assert seen.count(ActionKind.NONE) >= 5  # the quiesce rounds


# --------------------------------------------------------------------------------------------
# henge: the product's own rules
# --------------------------------------------------------------------------------------------


def test_wake_on_new_job_leaves_converged_for_a_newcomer_missing_its_slo() -> None:
    jobs = [job("a"), job("b"), job("new", priority=1.0, utility=0.7, capacity=0.6)]
    state = _converged_state()
    paper_plan, paper_state = run(paper(), snapshot(jobs), state, T0)
    assert paper_plan.action is ActionKind.NONE  # a 1.4 % drop: the paper stays converged
    assert paper_state.cluster_state is ClusterState.CONVERGED
    plan, new_state = run(product(give_back=False), snapshot(jobs), state, T0)
    assert plan.action is ActionKind.RECONFIGURE
    assert plan.job_id == "new"
    assert "new job new misses its SLO" in plan.reason
    assert new_state.history  # history kept: no drop happened


# --------------------------------------------------------------------------------------------
# Step 8: admission (through decide())
# --------------------------------------------------------------------------------------------


def _queued(initial: int = 2) -> object:
    return job("q", status=JobStatus.QUEUED, executors=0, initial_executors=initial,
               with_metrics=False, reported_at=None)  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "running_utility", "free", "admitted", "why"),
    [
        ("henge", 10.0, 100.0, True, "admitted"),
        ("henge", 5.0, 100.0, False, "misses its SLO"),
        # short of its SLO by less than `min_gain` (0.05) of its priority: no move would be
        # made for it, so it holds nobody back under `priority`; the paper's rule has no slack
        ("henge", 9.6, 100.0, True, "admitted"),
        ("henge", 9.4, 100.0, False, "misses its SLO"),
        ("henge-paper", 9.6, 100.0, False, "misses its SLO"),
        ("henge-paper", 5.0, 100.0, False, "misses its SLO"),
        ("henge", 10.0, 1.0, False, "do not fit"),  # (a quarter of a core on each node)
        ("static", 5.0, 100.0, True, "admitted"),  # baselines: fit is enough
        ("static", 10.0, 1.0, False, "do not fit"),
    ],
)
def test_admission_queues_when_slos_missed(
    policy: str, running_utility: float, free: float, admitted: bool, why: str
) -> None:
    settings = CoreSettings(policy=policy)
    jobs = [job("a", utility=running_utility, capacity=0.2), _queued()]
    plan, _ = decide(snapshot(jobs, free=free), SchedulerState.initial(settings), settings, T0)
    [admission] = plan.admissions
    assert admission.job_id == "q"
    assert admission.status is (JobStatus.ADMITTED if admitted else JobStatus.QUEUED)
    assert why in admission.reason
    grants = [c for c in plan.changes if c.job_id == "q"]
    if not admitted:
        assert grants == []
    else:
        assert [(c.from_executors, c.to_executors) for c in grants] == [(0, 2)]
        assert plan.action in (ActionKind.ADMIT, ActionKind.RECONFIGURE)
    assert "q" not in plan.frozen_jobs


@pytest.mark.parametrize(
    ("min_gain", "admission", "utility", "admitted"),
    [
        (0.05, "policy", 9.6, True),
        (0.02, "policy", 9.6, False),
        (0.05, "policy", 9.5, False),  # short by min_gain exactly: a move may be made for it
        (0.05, "slos-met", 9.6, False),  # the slack belongs to the `priority` rule alone
    ],
)
def test_henges_admission_slack_is_its_min_gain(
    min_gain: float, admission: str, utility: float, admitted: bool
) -> None:
    """A running job 4 % short of its SLO holds a newcomer back only when a move would be made
    for a gain that small."""
    settings = CoreSettings(
        policy="henge", policy_params={"min_gain": min_gain}, admission=admission
    )
    jobs = [job("a", utility=utility, capacity=0.2), _queued()]
    plan, _ = decide(snapshot(jobs), SchedulerState.initial(settings), settings, T0)
    [admission] = plan.admissions
    assert admission.status is (JobStatus.ADMITTED if admitted else JobStatus.QUEUED)


def test_henge_admits_a_job_with_what_fits_when_its_minimum_fits_in_the_free_room() -> None:
    """One core free, no lower priority to take from: the job that asked for two starts on
    one, and the running job of its priority keeps its executors."""
    settings = CoreSettings(policy="henge")
    jobs = [job("a", executors=30), _queued(initial=2)]
    room = snapshot(jobs, free=1.0, nodes=1)
    plan, _ = decide(room, SchedulerState.initial(settings), settings, T0)
    [admission] = plan.admissions
    assert admission.status is JobStatus.ADMITTED, admission.reason
    assert admission.reason == "admitted with 1 executor(s)"
    assert [(c.job_id, c.from_executors, c.to_executors) for c in plan.changes] == [("q", 0, 1)]


def _waiting_job(name: str, initial: int, *, seconds: int = 0, **extra: object) -> object:
    return job(name, status=JobStatus.QUEUED, executors=0, initial_executors=initial,
               with_metrics=False, reported_at=None,
               registered_at=T0 + timedelta(seconds=seconds), **extra)  # fmt: skip


@pytest.mark.parametrize(
    ("queued", "free_cores", "free_memory_mb"),
    [
        ({"initial": 4, "min_executors": 2}, 1.0, 65536.0),  # its minimum needs 2 cores
        ({"initial": 2, "min_executors": 0}, 0.5, 65536.0),  # a minimum of 0 needs one all the same
        ({"initial": 2, "memory_mb": 4096}, 1.0, 2048.0),  # the core is free, the memory is not
    ],
)
def test_henge_does_not_admit_a_job_when_the_free_room_holds_less_than_its_minimum(
    queued: dict[str, int], free_cores: float, free_memory_mb: float
) -> None:
    settings = CoreSettings(policy="henge")
    node = NodeView("n0", cores=32.0, memory_mb=65536.0, cores_requested=32.0 - free_cores,
                    memory_requested_mb=65536.0 - free_memory_mb)  # fmt: skip
    jobs = [job("a", executors=31), _waiting_job("q", **queued)]
    snap = replace(snapshot(jobs), cluster=ClusterView((node,)))
    plan, _ = decide(snap, SchedulerState.initial(settings), settings, T0)
    [admission] = plan.admissions
    assert admission.status is JobStatus.QUEUED, admission.reason
    assert "do not fit" in admission.reason and not plan.changes


def test_a_job_admitted_with_what_fits_never_takes_the_room_of_one_behind_it_that_fits() -> None:
    """First fit: the big job registered first does not fit whole; the small one behind it
    does, and is admitted whole before the big one gets what is left."""
    settings = CoreSettings(policy="henge")
    big = _waiting_job("big", 8)
    small = _waiting_job("small", 2, seconds=1)
    plan, _ = decide(
        snapshot([job("a", executors=30), big, small], free=3.0, nodes=1),
        SchedulerState.initial(settings),
        settings,
        T0,
    )
    assert [(a.job_id, a.reason) for a in plan.admissions] == [
        ("big", "admitted with 1 executor(s)"),
        ("small", "admitted with 2 executor(s)"),
    ]
    assert {c.job_id: c.to_executors for c in plan.changes} == {"big": 1, "small": 2}


def test_admission_waits_for_a_job_that_has_not_reported() -> None:
    settings = CoreSettings(policy="henge")
    warming = job("w", with_metrics=False, reported_at=None)
    jobs = [job("a"), warming, _queued()]
    plan, _ = decide(snapshot(jobs), SchedulerState.initial(settings), settings, T0)
    [admission] = plan.admissions
    assert admission.status is JobStatus.QUEUED
    assert "has not reported yet" in admission.reason


def test_admission_reserves_room_before_the_policy_grows_jobs() -> None:
    settings = CoreSettings(policy="henge-paper", admission="fits")
    jobs = [job("a", utility=2.0, capacity=0.6), _queued(initial=3)]
    plan, _ = decide(snapshot(jobs, free=8.0), SchedulerState.initial(settings), settings, T0)
    by_job = {c.job_id: c.to_executors for c in plan.changes}
    assert by_job["q"] == 3
    assert by_job["a"] == 4 + 5  # 8 free cores, 3 went to the admitted job


# --------------------------------------------------------------------------------------------
# State persistence
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["henge-paper", "henge"])
def test_state_round_trips_through_json_between_rounds(policy: str) -> None:
    settings = CoreSettings(policy=policy)
    jobs = [job("a", utility=2.0, capacity=0.9), job("b", executors=10, capacity=0.1)]
    state = SchedulerState.initial(settings)
    for k in range(12):
        moment = at(10 * k)
        current = [replace(j, last_report_at=moment) for j in jobs]
        plan, state = decide(snapshot(current, free=6.0, when=moment), state, settings, moment)
        text = json.dumps(state.to_json())
        restored = SchedulerState.from_json(json.loads(text))
        assert restored == state
        jobs = apply(jobs, plan)
    policy_state = state.policy_state
    if isinstance(policy_state, HengeState):
        assert policy_state.history
        assert load(json.loads(json.dumps(dump(policy_state)))) == policy_state
    else:
        assert policy_state.peaks


def test_policy_change_starts_the_new_policy_afresh() -> None:
    old = CoreSettings(policy="henge")
    state = SchedulerState.initial(old)
    new = CoreSettings(policy="static")
    plan, new_state = decide(snapshot([job("a")]), state, new, T0)
    assert new_state.policy == "static"
    assert plan.action is ActionKind.NONE


# --------------------------------------------------------------------------------------------
# "Every constant above is a setting with the paper's value as default"
# --------------------------------------------------------------------------------------------


def test_every_constant_is_a_setting_with_the_paper_default() -> None:
    core = CoreSettings()
    assert core.stale_after_s == 30.0  # 3 sub-windows of 10 s
    assert core.outage_fraction == 0.5
    assert core.recovery_observe_s == 300.0
    henge = HengeSettings()
    assert (henge.round_interval_s, henge.quiesce_s) == (10.0, 60.0)
    assert (henge.min_gain, henge.blacklist_ttl_s) == (0.05, 3600.0)
    assert (henge.reduction_fraction, henge.rate_change) == (0.8, 0.2)
    assert (henge.converged_drop, henge.settle_rounds) == (0.05, 4)
    assert (henge.capacity_threshold, henge.step) == (0.3, 10)
    # The paper's state machine: none of the product's switches.
    assert not any(getattr(henge, name) for name in PRODUCT_SWITCHES)


@pytest.mark.parametrize(("a_utility", "leaves"), [(1.6, False), (1.2, True)])
def test_converged_drop_is_relative_to_the_converged_utility(
    a_utility: float, leaves: bool
) -> None:
    # Converged at 12 of 20 (0.6). 11.6 is a 3.3 % drop: stay. 11.2 is 0.04 below in fraction
    # points but a 6.7 % drop relative to 0.6: more than 5 %, so the history is forgotten.
    jobs = [job("a", utility=a_utility, capacity=0.6), job("b")]
    state = replace(_converged_state(), converged_fraction=0.6)
    _, new_state = run(paper(), snapshot(jobs), state, T0)
    expected = ClusterState.NOT_CONVERGED if leaves else ClusterState.CONVERGED
    assert new_state.cluster_state is expected
