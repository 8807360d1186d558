"""What a change costs a job (``henge``'s ``price_moves``): measured from what followed its
earlier changes, charged in the solver, and waited out before a move is judged."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from scheduler.core.model import ActionKind, JobView
from scheduler.core.policies.henge import costs
from scheduler.core.policies.henge.costs import ChangeCost, Flow, Transient
from scheduler.core.policies.henge.product import HengeProductPolicy
from scheduler.core.policies.henge.product_settings import ProductSettings
from scheduler.core.policies.henge.product_state import ProductState, dump, load
from scheduler.core.policies.henge.rises import Rises

from .henge_builders import at
from .test_henge_product import behind, decide, fitted, streaming, targets

ALPHA = 0.3
CAP = 300.0


def follow(
    cost: ChangeCost,
    rounds: list[tuple[float, float, float | None, bool, bool]],
) -> ChangeCost:
    """``cost`` through rounds of (seconds, fraction, expected, running, draining), 60 s
    windows holding completed batches."""
    for now_s, fraction, expected, running, draining in rounds:
        flow = Flow(60.0, 60.0, draining)
        cost = costs.observe(cost, now_s, fraction, expected, running, flow, ALPHA, CAP)
    return cost


def test_the_dip_below_the_level_before_and_the_models_path_is_the_cost() -> None:
    cost = costs.begin(None, 0.0, 1.0, 4, ALPHA)
    cost = follow(
        cost,
        [
            (10.0, 1.0, 1.0, False, False),  # executors starting
            (20.0, 0.2, 1.0, True, False),  # running them: the state reloads
            (30.0, 0.0, 0.9, True, True),  # working off the backlog the stall left
            (40.0, 0.5, 0.9, True, True),
            (50.0, 1.0, 1.0, True, False),
            (70.0, 1.0, 1.0, True, False),  # 50 s on the new executors: not settled yet
        ],
    )
    assert cost.open is not None and cost.dip_s is None
    cost = follow(cost, [(80.0, 1.0, 1.0, True, False)])  # a whole window since it ran them
    assert cost.open is None and cost.changes == 1
    assert cost.dip_s == pytest.approx(10 * 0.8 + 10 * 1.0 + 10 * 0.5)
    assert cost.settle_s == pytest.approx(80.0)


def test_a_burst_during_the_change_is_not_counted_as_its_cost() -> None:
    # A job missing its SLO before the change: the input rose, the model expects less at the
    # new size too, and the job earns that.
    cost = costs.begin(None, 0.0, 0.5, 4, ALPHA)
    cost = follow(cost, [(10.0, 0.6, 0.6, True, False), (70.0, 0.6, 0.6, True, False)])
    assert cost.dip_s == pytest.approx(0.0) and cost.open is None


def test_without_a_model_the_dip_is_below_both_the_level_before_and_the_settled_one() -> None:
    # A donor meant to drop from 1.0 to 0.5: only what it lost below 0.5 is the change's cost.
    cost = costs.begin(None, 0.0, 1.0, 4, ALPHA)
    cost = follow(
        cost,
        [
            (10.0, 0.1, None, True, False),
            (20.0, 0.5, None, True, False),
            (70.0, 0.5, None, True, False),
        ],
    )
    assert cost.dip_s == pytest.approx(10 * 0.4)


def test_a_change_cut_short_counts_its_dip_so_far_and_the_averages_move_by_alpha() -> None:
    cost = ChangeCost(20.0, 100.0, 3, Transient(0.0, 1.0, 6, 0.0, ((10.0, 0.0, 1.0),)))
    cost = costs.begin(cost, 15.0, 0.0, 9, ALPHA)
    assert cost.dip_s == pytest.approx(20.0 + ALPHA * (10.0 - 20.0))
    assert cost.settle_s == 100.0  # (it did not settle: its time to settle is unknown)
    assert cost.changes == 4 and cost.open == Transient(15.0, 0.0, 9, None, ())


def test_a_job_has_recovered_a_window_after_batches_first_flow_on_its_new_executors() -> None:
    cost = costs.begin(None, 0.0, 1.0, 4, ALPHA)
    stall = [(10.0, 1.0, 1.0, True), (40.0, 0.0, 1.0, True), (70.0, 0.0, 1.0, True)]
    for now_s, fraction, expected, running in stall:  # no batch completes: a stall
        cost = costs.observe(cost, now_s, fraction, expected, running, None, ALPHA, CAP)
        assert costs.recovering(cost, now_s)
    # Batches complete from 80 s, and the job works off the backlog the stall left.
    cost = follow(cost, [(80.0, 0.0, 1.0, True, True)])
    assert cost.open is not None and cost.open.clear_s == 140.0
    cost = follow(cost, [(110.0, 0.3, 1.0, True, True)])
    assert costs.recovering(cost, 110.0)
    cost = follow(cost, [(140.0, 0.6, 1.0, True, True)])
    # Its window now holds only batches after the stall: recovered, though not settled, and
    # its cost is still followed.
    assert not costs.recovering(cost, 140.0)
    assert cost.open is not None and cost.dip_s is None


def test_while_a_first_change_is_followed_its_charge_is_the_dip_so_far() -> None:
    cost = costs.begin(None, 0.0, 1.0, 4, ALPHA)
    cost = follow(cost, [(10.0, 0.5, -1.0, True, True), (20.0, 0.0, -1.0, True, True)])
    # 10 s at half its priority lost, then 10 s at all of it.
    assert costs.charge(cost, 50.0, 600.0) == pytest.approx(50.0 * 15.0 / 600.0)


def test_a_job_that_never_settles_is_followed_for_the_cap_at_most() -> None:
    cost = costs.begin(None, 0.0, 1.0, 4, ALPHA)
    cost = follow(cost, [(t, 0.0, 1.0, True, True) for t in range(10, 310, 10)])
    assert cost.open is None and cost.settle_s == CAP and cost.dip_s == pytest.approx(300.0)


def test_costs_survive_the_state_json() -> None:
    opened = Transient(5.0, 0.7, 3, 15.0, ((10.0, 0.2, 0.9), (20.0, 0.4, -1.0)))
    state = ProductState(costs={"a": ChangeCost(12.5, 90.0, 2, opened), "b": costs.NONE})
    assert load(dump(state)).costs == state.costs


def test_the_charge_is_the_dip_over_how_long_the_allocation_holds() -> None:
    assert costs.charge(ChangeCost(36.0, 80.0, 1, None), 50.0, 600.0) == pytest.approx(3.0)
    assert costs.charge(costs.NONE, 50.0, 600.0) == 0.0


# -- the policy ----------------------------------------------------------------------------------


def stalled(view: JobView) -> JobView:
    """``view`` running its executors but earning nothing and completing no batch (a state
    reload, say)."""
    assert view.metrics is not None
    metrics = replace(view.metrics, utility=0.0, latency_ms=1e9, seconds=60.0, processed_rate=0.0)
    return replace(view, metrics=metrics)


def settled(view: JobView) -> JobView:
    assert view.metrics is not None
    return replace(view, metrics=replace(view.metrics, seconds=60.0))


def priced(on: bool) -> HengeProductPolicy:
    return HengeProductPolicy(ProductSettings(price_moves=on))


@pytest.mark.parametrize("on", [True, False])
def test_a_stall_the_jobs_history_predicts_does_not_revert_the_move(on: bool) -> None:
    hi, lo = streaming("hi", 4, 4000.0, priority=90.0), streaming("lo", 30, 2000.0)
    # Both have settled about 200 s after their earlier changes, at a small cost each time.
    history = {k: ChangeCost(5.0, 200.0, 4, None) for k in ("hi", "lo")}
    state = ProductState(models=fitted([hi, lo]), costs=history)
    plan, state = decide(priced(on), [hi, lo], state, 0, free=0.0)
    moved = targets(plan)
    assert plan.action is ActionKind.RECONFIGURE and moved["hi"] > 4 and moved["lo"] < 30

    # 70 s on, both run their new executors and both still reload their state.
    during = [
        stalled(streaming("hi", moved["hi"], 4000.0, priority=90.0)),
        stalled(streaming("lo", moved["lo"], 2000.0)),
    ]
    plan, state = decide(priced(on), during, state, 70, free=0.0)
    if not on:  # judged at the end of a quiesce, on the stall: reverted
        assert plan.action is ActionKind.REVERT
        return
    assert plan.action is ActionKind.NONE and "130 s left at most" in plan.reason

    # Once they have reloaded, the move is judged on what they earn, and holds.
    after = [
        settled(streaming("hi", moved["hi"], 4000.0, priority=90.0)),
        settled(streaming("lo", moved["lo"], 2000.0)),
    ]
    plan, state = decide(priced(on), after, state, 210, free=0.0)
    assert plan.action is not ActionKind.REVERT and "the last move holds" in plan.reason
    assert state.last_move is not None and state.last_move.judged
    # What the stall cost each is now part of its history: lo, which met its SLO before,
    # lost 70 s of its priority to it (averaged in with its earlier 5 s).
    assert all(state.costs[k].changes == 5 for k in ("hi", "lo"))
    assert state.costs["lo"].dip_s == pytest.approx(5.0 + 0.3 * (70.0 - 5.0))


def test_a_first_change_is_judged_once_the_job_completes_batches_on_its_new_executors() -> None:
    # No change of either job measured yet: how long they stall is not known.
    hi, lo = streaming("hi", 4, 4000.0, priority=90.0), streaming("lo", 30, 2000.0)
    state = ProductState(models=fitted([hi, lo]))
    plan, state = decide(priced(True), [hi, lo], state, 0, free=0.0)
    moved = targets(plan)
    assert plan.action is ActionKind.RECONFIGURE

    def views(kind: Callable[[JobView], JobView]) -> list[JobView]:
        return [
            kind(streaming("hi", moved["hi"], 4000.0, priority=90.0)),
            kind(streaming("lo", moved["lo"], 2000.0)),
        ]

    # Running the new executors from 70 s on, for a whole window by 140 s, but no batch has
    # completed in it: a stall, not a settled job, so the move is not judged on it yet.
    for seconds in (70, 100, 140):
        plan, state = decide(priced(True), views(stalled), state, seconds, free=0.0)
        assert plan.action is ActionKind.NONE
        assert plan.reason.startswith("moved jobs recovering from their change: hi, lo")
    assert state.costs["hi"].open is not None and state.costs["lo"].open is not None

    # Batches complete again at 150 s, more than a window and a batch after the jobs first ran
    # their new executors: settled, and the move is judged on what they earn.
    plan, state = decide(priced(True), views(settled), state, 150, free=0.0)
    assert "the last move holds" in plan.reason
    assert state.costs["lo"].open is None and state.costs["lo"].changes == 1
    assert state.costs["lo"].settle_s == pytest.approx(150.0)
    # Off, the same stall is judged at the end of the quiesce, and reverts the move.
    off = ProductState(models=fitted([hi, lo]))
    plan, off = decide(priced(False), [hi, lo], off, 0, free=0.0)
    plan, _ = decide(priced(False), views(stalled), off, 70, free=0.0)
    assert plan.action is ActionKind.REVERT


@pytest.mark.parametrize(("input_rate", "settles"), [(0.0, True), (2000.0, False)])
def test_a_window_without_batches_is_a_stall_only_when_rows_came_in(
    input_rate: float, settles: bool
) -> None:
    # The job has run the executors of its change for 90 s and completed no batch since: with
    # rows arriving that is a stall; with none there was nothing to process.
    running = streaming("idle", 4, 2000.0)
    assert running.metrics is not None
    quiet = replace(running.metrics, input_rate=input_rate, processed_rate=0.0, seconds=60.0)
    view = replace(running, metrics=quiet)
    opened = Transient(at(-100).timestamp(), 1.0, 6, at(-90).timestamp(), ())
    costs_now = {"idle": ChangeCost(None, None, 0, opened)}
    state = ProductState(models=fitted([running]), costs=costs_now)
    _, after = decide(priced(True), [view], state, 0)
    assert (after.costs["idle"].changes == 1) is settles  # (folded in: it settled)


@pytest.mark.parametrize(("dip_s", "grows"), [(5.0, True), (1e6, False)])
def test_a_move_is_made_only_when_its_gain_outweighs_what_the_change_costs(
    dip_s: float, grows: bool
) -> None:
    low = streaming("low", 4, 4000.0)  # misses; needs 13, and the free cores are there
    state = ProductState(models=fitted([low]), costs={"low": ChangeCost(dip_s, 60.0, 3, None)})
    plan, _ = decide(priced(True), [low], state, 0)
    assert (plan.action is ActionKind.RECONFIGURE) is grows
    if grows:
        assert "a change has cost (seconds of all it earns): low 5 s" in plan.reason
    else:
        assert "missing their SLO: low" in plan.reason


def test_a_job_settling_after_its_change_is_left_where_it_is() -> None:
    low = streaming("low", 4, 4000.0)
    opened = Transient(at(-20).timestamp(), 1.0, 4, None, ())
    settling = {"low": ChangeCost(None, None, 0, opened)}
    state = ProductState(models=fitted([low]), costs=settling)
    plan, after = decide(priced(True), [low], state, 0)
    assert plan.action is ActionKind.NONE
    assert after.costs["low"].open is not None  # still followed
    plan, _ = decide(priced(False), [low], state, 0)
    assert plan.action is ActionKind.RECONFIGURE and targets(plan)["low"] >= 13


def test_a_job_that_has_recovered_from_its_change_may_move_while_its_cost_is_followed() -> None:
    # Its window holds only batches after its stall since 10 s ago; it still works off the
    # backlog, so the change is still followed.
    low = streaming("low", 4, 4000.0)
    opened = Transient(
        at(-200).timestamp(),
        1.0,
        4,
        at(-190).timestamp(),
        ((10.0, 1.0, -1.0),),
        at(-10).timestamp(),
    )
    state = ProductState(models=fitted([low]), costs={"low": ChangeCost(None, None, 0, opened)})
    plan, _ = decide(priced(True), [low], state, 0)
    assert plan.action is ActionKind.RECONFIGURE and targets(plan)["low"] >= 13


def test_a_move_that_helps_is_judged_at_once_and_its_recovering_job_held() -> None:
    hi, lo = streaming("hi", 4, 4000.0, priority=90.0), streaming("lo", 30, 2000.0)
    state = ProductState(models=fitted([hi, lo]))
    plan, state = decide(priced(True), [hi, lo], state, 0, free=0.0)
    moved = targets(plan)
    hi_now = streaming("hi", moved["hi"], 4000.0, priority=90.0)
    lo_now = streaming("lo", moved["lo"], 2000.0)
    # Both run their new executors from 70 s and stall; from 140 s lo has settled and hi
    # completes batches, working off the backlog its stall left faster than rows come in.
    plan, state = decide(priced(True), [stalled(hi_now), stalled(lo_now)], state, 70, free=0.0)
    assert plan.action is ActionKind.NONE
    now = [behind(hi_now, 2.0), settled(lo_now)]
    plan, state = decide(priced(True), now, state, 140, free=0.0)
    assert "the last move holds" in plan.reason and "draining a backlog: hi" in plan.reason
    # hi's window may still hold its stall until a window after its first batches (200 s):
    # its change is still followed, and it keeps its executors till then, though still behind.
    assert state.costs["hi"].open is not None
    plan, state = decide(priced(True), now, state, 170, free=0.0)
    assert plan.action is ActionKind.NONE
    plan, state = decide(priced(True), now, state, 200, free=0.0)
    assert plan.action is ActionKind.RECONFIGURE and targets(plan)["hi"] > moved["hi"]


def test_a_judgement_put_off_folds_the_moved_jobs_errors_in_once() -> None:
    hi, lo = streaming("hi", 4, 4000.0, priority=90.0), streaming("lo", 30, 2000.0)
    # hi has settled about 200 s after its earlier changes, lo 30 s.
    history = {"hi": ChangeCost(5.0, 200.0, 4, None), "lo": ChangeCost(5.0, 30.0, 4, None)}
    state = ProductState(models=fitted([hi, lo]), costs=history, errors={"lo": 0.1})
    plan, state = decide(priced(True), [hi, lo], state, 0, free=0.0)
    moved, start = targets(plan), state.errors["lo"]
    hi_now = streaming("hi", moved["hi"], 4000.0, priority=90.0)
    lo_now = settled(streaming("lo", moved["lo"], 2000.0))
    # hi still reloads, so the move looks lost and its judgement is put off, twice; lo, past
    # its usual time to settle, runs as its model predicts. No round folds lo's error in.
    for seconds in (70, 100):
        plan, state = decide(priced(True), [stalled(hi_now), lo_now], state, seconds, free=0.0)
        assert plan.reason.startswith("moved jobs recovering from their change: hi")
        assert state.errors["lo"] == start
    # Judged two quiesces after the move: every round folds the moved jobs' errors in again by
    # then, so the judgement does not as well. lo's error (0 now) is averaged in once.
    plan, state = decide(priced(True), [settled(hi_now), lo_now], state, 210, free=0.0)
    assert "the last move holds" in plan.reason
    assert state.errors["lo"] == pytest.approx(0.7 * start, abs=1e-4)


def keeping(view: JobView, state: bool | None) -> JobView:
    """``view`` whose reports say whether it keeps state (``None``: they do not say)."""
    assert view.metrics is not None
    return replace(view, metrics=replace(view.metrics, holds_state=state))


@pytest.mark.parametrize("state", [True, None, False])
def test_a_job_that_keeps_no_state_is_not_held_after_its_change(state: bool | None) -> None:
    # Still recovering from its last change: held where it is, unless it keeps no state (its
    # change reloads nothing, and its charge still prices the executors' start).
    low = keeping(streaming("low", 4, 4000.0), state)
    opened = Transient(at(-20).timestamp(), 1.0, 4, None, ())
    following = {"low": ChangeCost(None, None, 0, opened)}
    plan, _ = decide(priced(True), [low], ProductState(models=fitted([low]), costs=following), 0)
    assert (plan.action is ActionKind.RECONFIGURE) is (state is False), plan.reason

    # A move whose jobs stall for 70 s is judged once they recover, whether they keep state or
    # not: a window holding the new executors' start looks like a loss too.
    hi, lo = streaming("hi", 4, 4000.0, priority=90.0), streaming("lo", 30, 2000.0)
    history = {k: ChangeCost(5.0, 200.0, 4, None) for k in ("hi", "lo")}
    moves = ProductState(models=fitted([hi, lo]), costs=history)
    plan, moves = decide(priced(True), [hi, lo], moves, 0, free=0.0)
    moved = targets(plan)
    during = [
        keeping(stalled(streaming("hi", moved["hi"], 4000.0, priority=90.0)), state),
        keeping(stalled(streaming("lo", moved["lo"], 2000.0)), state),
    ]
    plan, _ = decide(priced(True), during, moves, 70, free=0.0)
    assert plan.action is ActionKind.NONE and "130 s left at most" in plan.reason


@pytest.mark.parametrize("state", [True, None, False])
def test_a_job_recovering_from_its_change_gives_nothing_away(state: bool | None) -> None:
    # A job of higher priority misses its SLO in a full cluster; the only donor changed 20 s
    # ago and its window may still hold the change's stall: what it earns tells what the
    # change cost, not what its executors are worth, so it gives none of them away yet.
    hi, lo = streaming("hi", 4, 4000.0, priority=90.0), keeping(streaming("lo", 30, 2000.0), state)
    models = fitted([hi, lo])
    opened = Transient(at(-20).timestamp(), 1.0, 29, at(-10).timestamp(), ())
    state_then = ProductState(models=models, costs={"lo": ChangeCost(None, None, 0, opened)})
    plan, _ = decide(priced(True), [hi, lo], state_then, 0, free=0.0)
    assert plan.action is ActionKind.NONE, plan.reason

    # Once its window holds only batches after the stall, it gives way as any donor does.
    clear = opened._replace(clear_s=at(-5).timestamp())
    state_now = ProductState(models=models, costs={"lo": ChangeCost(None, None, 0, clear)})
    plan, _ = decide(priced(True), [hi, lo], state_now, 0, free=0.0)
    moved = targets(plan)
    assert moved["lo"] < 30 and moved["hi"] > 4, plan.reason


@pytest.mark.parametrize(("steady_s", "grows"), [(None, False), (3 * 3600.0, True)])
def test_a_change_after_a_first_rise_is_priced_over_the_calm_before_it(
    steady_s: float | None, grows: bool
) -> None:
    # `low` misses on 4 executors after its input's first rise, a minute ago; a change has cost
    # it a minute of all it earns. Priced over the minute since the rise, growing does not pay;
    # over the three hours its input went without one before it, it does.
    low = streaming("low", 4, 4000.0)
    now = at(0).timestamp()
    first = None if steady_s is None else now - 60.0 - steady_s
    rises = Rises(((now - 10.0, 4000.0),), False, now - 60.0, None, first)
    state = ProductState(
        models=fitted([low]),
        costs={"low": ChangeCost(60.0, 60.0, 3, None)},
        rises={"low": rises},
    )
    plan, _ = decide(priced(True), [low], state, 0)
    assert (plan.action is ActionKind.RECONFIGURE) is grows, plan.reason
