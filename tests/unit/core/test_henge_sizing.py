"""Sizing: eq. 2.4 (henge-paper) and the fitted job model (henge)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from scheduler.core.model import ActionKind, BatchFit, ClusterState, JobView
from scheduler.core.policies.henge import (
    Configuration,
    HengeSettings,
    HengeState,
    JobModel,
    LastAction,
    Step,
    model_need,
    model_target,
    observe,
    paper_extra,
    predict,
    smallest,
)
from scheduler.core.slo import SLO

from .henge_builders import (
    COST,
    OVERHEAD,
    T0,
    at,
    job,
    paper,
    product,
    run,
    snapshot,
    spark_metrics,
)

# --------------------------------------------------------------------------------------------
# eq. 2.4
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capacity", "extra"),
    [
        (0.6, 10),  # (2 - 1) × 10
        (0.45, 5),  # (1.5 - 1) × 10
        (0.9, 20),  # 0.9 / 0.3 is 3.0000000000000004 in floats: still 20
        (1.0, 24),  # ceil(23.33)
        (0.31, 1),  # ceil(0.33)
        (0.3, 0),  # at the threshold: not congested
        (0.1, 0),
    ],
)
def test_eq_2_4_extra_executors(capacity: float, extra: int) -> None:
    assert paper_extra(capacity, 0.3, 10) == extra


@pytest.mark.parametrize(("threshold", "step", "extra"), [(0.5, 10, 8), (0.3, 4, 8)])
def test_eq_2_4_follows_its_settings(threshold: float, step: int, extra: int) -> None:
    assert paper_extra(0.9, threshold, step) == extra


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


def model_job(
    executors: int,
    rate: float,
    slo: SLO,
    *,
    reported: datetime = T0,
    max_executors: int = 40,
    trigger: float | None = None,
    priority: float = 10.0,
) -> JobView:
    base = job("a", priority=priority, executors=executors, max_executors=max_executors,
               slo=slo, reported_at=reported)  # fmt: skip
    metrics = spark_metrics(slo, priority, executors, rate, trigger=trigger)
    return replace(base, metrics=metrics)


def fitted(views: list[JobView], alpha: float = 0.3) -> JobModel:
    model = None
    for view in views:
        model = observe(model, view, alpha)
    assert model is not None
    return model


@pytest.mark.parametrize(
    ("executors", "rate", "trigger"),
    [
        (4, 4000.0, None),  # falling behind (ρ = 2)
        (20, 4000.0, None),  # keeping up, batches back to back
        (20, 4000.0, 5.0),  # keeping up, paced by a 5 s trigger
    ],
)
def test_model_recovers_rows_per_core_second_overhead_and_trigger(
    executors: int, rate: float, trigger: float | None
) -> None:
    slo = SLO(latency_ms=2000.0)
    views = [model_job(executors, rate, slo, reported=at(10 * k), trigger=trigger)
             for k in range(3)]  # fmt: skip
    model = fitted(views)
    assert model.windows == 3
    assert model.row_cost_s == pytest.approx(COST)
    assert model.overhead_s == pytest.approx(OVERHEAD)
    if trigger is None:
        assert not model.trigger_s  # back to back (0) or never seen keeping up (None)
    else:
        assert model.trigger_s == pytest.approx(trigger)


def _late(view: JobView, behind_fraction: float, **changes: float) -> JobView:
    """``view`` with some of its window's sub-windows behind (and other metrics changed)."""
    assert view.metrics is not None
    metrics = replace(view.metrics, behind_fraction=behind_fraction, **changes)
    return replace(view, metrics=metrics)


def test_model_reads_the_trigger_from_gapped_batches_even_when_a_few_ran_late() -> None:
    # A job near its SLO has a late batch now and then; the gaps between the others still
    # show the 5 s trigger. Assuming batches back to back instead predicts a latency below
    # the real one (1.5 × o / (1 - ρ) against o + ρT + T/2), so the job would be sized short.
    slo = SLO(latency_ms=5000.0)
    views = [_late(model_job(20, 4000.0, slo, reported=at(10 * k), trigger=5.0), 1 / 3)
             for k in range(3)]  # fmt: skip
    model = fitted(views)
    assert model.trigger_s == pytest.approx(5.0)
    paced = predict(model, views[-1], 20, 4000.0)[1]
    assert paced == pytest.approx(views[-1].metrics.latency_ms)  # type: ignore[union-attr]
    unpaced = predict(model._replace(trigger_s=None), views[-1], 20, 4000.0)[1]
    assert unpaced is not None and paced is not None and unpaced < paced


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        # One long batch working off a backlog, then short ones: the gaps between starts are
        # longer than the mean batch, but the rows waited 30 s, far more than a gap and a batch.
        ({"latency_ms": 30_000.0}, "gaps from a backlog drained, not from a trigger"),
        # 0.8 s is the batches' own duration here (0.5 / (1 - 0.4)).
        ({"trigger_interval_s": 0.8}, "late batches back to back: no sign of no trigger either"),
        # Two or three batches in a 60 s window: the mean gap may come from a batch begun
        # before the window.
        ({"trigger_interval_s": 25.0, "seconds": 60.0}, "too few gaps in the window"),
    ],
)
def test_model_learns_no_trigger_from_a_window_that_cannot_show_it(
    changes: dict[str, float], why: str
) -> None:
    slo = SLO(latency_ms=5000.0)
    views = [_late(model_job(20, 4000.0, slo, reported=at(10 * k), trigger=5.0), 1 / 3,
                   **changes) for k in range(3)]  # fmt: skip
    assert fitted(views).trigger_s is None, why


def test_model_keeps_its_row_cost_through_windows_that_a_batch_outlasts() -> None:
    # Behind on one core, the job runs batches of 60,000 rows, each 120.5 s long, through
    # 60 s windows: a window in which one ends counts all its rows against 60 busy core-seconds
    # (twice the real rate per busy second), the next counts none. Read from the first kind
    # alone, the cost per row would fall to half of what it is.
    slo = SLO(latency_ms=2000.0)
    model = fitted([model_job(4, 1000.0, slo, reported=at(10 * k)) for k in range(3)])
    assert model.row_cost_s == pytest.approx(COST)
    batch_rows = 60_000.0
    batch_s = OVERHEAD + batch_rows * COST
    behind = model_job(1, 1000.0, slo)
    assert behind.metrics is not None
    for k in range(6):
        ended = k % 2 == 0
        metrics = replace(
            behind.metrics,
            processed_rate=batch_rows / 60.0 if ended else 0.0,
            busy_core_s=60.0,
            seconds=60.0,
            mean_batch_s=batch_s if ended else None,
            mean_batch_rows=batch_rows if ended else None,
            trigger_interval_s=None,
            batch_fit=None,
            behind_fraction=1.0,
        )
        view = replace(behind, metrics=metrics, last_report_at=at(100 + 60 * k))
        model = observe(model, view, 0.3)  # type: ignore[assignment]
    assert model.windows > 3  # the windows with a batch ending were folded in
    assert model.row_cost_s == pytest.approx(COST)
    # Batches just shorter than the window: it is read as usual.
    shorter = replace(view.metrics, mean_batch_s=59.0, processed_rate=batch_rows / 60.0)
    later = replace(view, metrics=shorter, last_report_at=at(1000))
    read = observe(model, later, 0.3)
    assert read is not None and read.row_cost_s < COST


def test_a_row_cost_set_too_high_comes_down_through_windows_that_a_batch_outlasts() -> None:
    # The cost kept through windows a batch outlasts is the one read before them. Cut to one
    # core, a job read three times its cost from a window whose busy time counted a batch
    # still running at its end; the batches ending in the windows that followed show what a
    # row costs at most.
    slo = SLO(latency_ms=2000.0)
    behind = model_job(1, 1000.0, slo)
    assert behind.metrics is not None
    inflated = JobModel(3 * COST, OVERHEAD, None, 10, None)
    batch_rows = 60_000.0
    batch_s = OVERHEAD + batch_rows * COST
    ended = replace(
        behind.metrics,
        processed_rate=batch_rows / 60.0,
        busy_core_s=60.0,
        seconds=60.0,
        mean_batch_s=batch_s,
        mean_batch_rows=batch_rows,
        trigger_interval_s=None,
        batch_fit=None,
        behind_fraction=1.0,
    )
    model = inflated
    for k in range(20):
        view = replace(behind, metrics=ended, last_report_at=at(100 + 60 * k))
        model = observe(model, view, 0.3)  # type: ignore[assignment]
    assert model.row_cost_s == pytest.approx(batch_s / batch_rows, rel=0.01)  # COST + 0.4 %
    assert model.executors == 1 and model.count_since == at(40).timestamp()
    # Until the count has held for the window and a batch, a batch ending in the window may
    # have begun on other cores: it bounds nothing, and the cost is kept. A window whose
    # reports ran on two counts starts the wait again.
    cut = inflated._replace(executors=8, count_since=at(0).timestamp())
    for seconds, steady, kept_s in [(100, True, 40), (220, True, 40), (280, False, 280)]:
        view = replace(behind, metrics=replace(ended, steady=steady), last_report_at=at(seconds))
        kept = observe(cut, view, 0.3)
        assert kept is not None and kept.row_cost_s == pytest.approx(3 * COST)
        assert kept.count_since == at(kept_s).timestamp()
        cut = kept


def test_model_reads_no_overhead_from_batches_that_did_not_run_on_the_windows_cores() -> None:
    # Cut to one executor while working off a backlog, a job finishes batches begun on more
    # cores: their durations against their rows fit a slope far below what a row costs on one
    # core and an intercept of many seconds, which is no fixed part of a batch. Read as one,
    # it would put every count above the job's SLO.
    slo = SLO(latency_ms=2000.0)
    model = fitted([model_job(4, 1000.0, slo, reported=at(10 * k)) for k in range(3)])
    assert model.overhead_s == pytest.approx(OVERHEAD)
    cut = model_job(1, 1000.0, slo, reported=at(100))
    assert cut.metrics is not None
    mixed = BatchFit(overhead_s=15.0, row_s=0.3 * COST)  # COST per row on the one core
    # Means that read 3 s of overhead (their batches ran on other cores too): not read either.
    rows = cut.metrics.mean_batch_rows or 10_000.0
    means = {"mean_batch_rows": rows, "mean_batch_s": 3.0 + rows * COST}
    view = replace(cut, metrics=replace(cut.metrics, batch_fit=mixed, **means))
    kept = observe(model, view, 0.3)
    assert kept is not None and kept.windows == model.windows + 1
    assert kept.overhead_s == pytest.approx(OVERHEAD)
    # A model without an overhead yet has nothing to keep: it reads the means, not the fit.
    first = observe(None, view, 0.3)
    assert first is not None and first.overhead_s == pytest.approx(3.0)
    # A fit whose slope agrees with the row cost is read, whatever its intercept.
    agreeing = BatchFit(overhead_s=1.5, row_s=1.2 * COST)
    view = replace(cut, metrics=replace(cut.metrics, batch_fit=agreeing),
                   last_report_at=at(110))  # fmt: skip
    read = observe(kept, view, 0.3)
    assert read is not None and read.overhead_s == pytest.approx(OVERHEAD + 0.3 * (1.5 - OVERHEAD))


def test_model_folds_each_report_once() -> None:
    view = model_job(4, 4000.0, SLO(latency_ms=2000.0))
    once = observe(None, view, 0.3)
    assert observe(once, view, 0.3) == once


def test_model_prediction_matches_the_job_it_was_fitted_on() -> None:
    slo = SLO(latency_ms=2000.0)
    model = fitted([model_job(20, 4000.0, slo, reported=at(10 * k)) for k in range(3)])
    for executors in (10, 16, 40):
        truth = spark_metrics(slo, 10.0, executors, 4000.0)
        juice, latency = predict(model, model_job(executors, 4000.0, slo), executors, 4000.0)
        assert juice == pytest.approx(1.0)
        assert latency == pytest.approx(truth.latency_ms)


def test_model_sizing_smallest_count_meeting_slo_with_headroom() -> None:
    # 4000 rows/s at 500 rows per core-second, 0.5 s per batch, latency SLO 2 s (mean):
    # latency = 1.5 × 0.5 / (1 - ρ) <= 2 needs ρ <= 0.625. With 20 % headroom (4800 rows/s),
    # ρ = 9.6 / n: n >= 15.36 → 16. Without headroom 13 would do.
    slo = SLO(latency_ms=2000.0)
    views = [model_job(4, 4000.0, slo, reported=at(10 * k)) for k in range(3)]
    model = fitted(views)
    sizing = model_target(views[-1], model, HengeSettings())
    assert sizing.target == 16
    assert not sizing.unattainable
    assert model_target(views[-1], model, HengeSettings(headroom=0.0)).target == 13


def test_model_sizing_falls_back_to_no_headroom_near_the_bound() -> None:
    slo = SLO(latency_ms=2000.0)
    views = [model_job(4, 4000.0, slo, reported=at(10 * k), max_executors=14)
             for k in range(3)]  # fmt: skip
    sizing = model_target(views[-1], fitted(views), HengeSettings())
    assert sizing.target == 13


def test_smallest_bisects_a_monotone_predicate() -> None:
    assert smallest(1, 100, lambda n: n * n >= 50) == 8
    assert smallest(1, 5, lambda n: n > 5) is None
    assert smallest(3, 3, lambda n: True) == 3


def _model_state(views: list[JobView], **extra: object) -> HengeState:
    return HengeState(models={"a": fitted(views)}, **extra)  # type: ignore[arg-type]


def test_henge_sizes_from_the_model_and_henge_paper_from_eq_2_4() -> None:
    slo = SLO(latency_ms=2000.0)
    views = [model_job(4, 4000.0, slo, reported=at(10 * k)) for k in range(3)]
    state = _model_state(views[:2])  # the third report is folded in by the round itself
    snap = snapshot([views[-1]], when=at(20))
    plan, new_state = run(product(), snap, state, at(20))
    assert plan.action is ActionKind.RECONFIGURE
    assert [(c.from_executors, c.to_executors) for c in plan.changes] == [(4, 16)]
    assert new_state.models["a"].windows == 3
    # eq. 2.4 at capacity 0.909: +21.
    capacity = views[-1].metrics.capacity  # type: ignore[union-attr]
    plan, _ = run(paper(), snap, HengeState(), at(20))
    assert [c.to_executors for c in plan.changes] == [4 + paper_extra(capacity, 0.3, 10)]


def test_henge_falls_back_to_eq_2_4_until_the_model_is_trusted() -> None:
    slo = SLO(latency_ms=2000.0)
    view = model_job(4, 4000.0, slo)
    plan, state = run(product(), snapshot([view]), HengeState(), T0)
    capacity = view.metrics.capacity  # type: ignore[union-attr]
    assert [c.to_executors for c in plan.changes] == [4 + paper_extra(capacity, 0.3, 10)]
    assert state.models["a"].windows == 1


def test_unattainable_slo_blacklisted_at_once() -> None:
    # A 400 ms latency SLO with 0.5 s of overhead per batch: even infinite executors cannot
    # beat 1.5 × 0.5 s = 750 ms. At 20 of at most 24 executors, more would add < 5 % utility.
    slo = SLO(latency_ms=400.0)
    views = [model_job(20, 4000.0, slo, reported=at(10 * k), max_executors=24)
             for k in range(3)]  # fmt: skip
    model = fitted(views)
    sizing = model_target(views[-1], model, HengeSettings())
    assert sizing.unattainable
    assert sizing.target is None
    plan, state = run(product(), snapshot([views[-1]], when=at(20)), _model_state(views[:2]),
                      at(20))  # fmt: skip
    assert plan.action is ActionKind.NONE
    assert "unattainable" in plan.reason
    assert state.blacklist == {"a": at(20 + 3600)}
    # The paper does not know: eq. 2.4 at capacity 0.4 gives +4 executors.
    plan, state = run(paper(), snapshot([views[-1]], when=at(20)), HengeState(), at(20))
    assert plan.action is ActionKind.RECONFIGURE
    assert [c.to_executors for c in plan.changes] == [24]
    assert state.blacklist == {}


def test_unreachable_slo_still_grows_when_utility_would_rise() -> None:
    # Same floor, but from 4 executors (falling behind) more executors raise utility a lot.
    slo = SLO(latency_ms=400.0)
    views = [model_job(4, 4000.0, slo, reported=at(10 * k)) for k in range(3)]
    sizing = model_target(views[-1], fitted(views), HengeSettings())
    assert not sizing.unattainable
    assert sizing.target is not None
    assert 4 < sizing.target <= 40


# --------------------------------------------------------------------------------------------
# henge: giving back executors a converged job does not need
# --------------------------------------------------------------------------------------------


def _converged_with_model(views: list[JobView]) -> HengeState:
    return HengeState(
        cluster_state=ClusterState.CONVERGED,
        last_action=LastAction(Step.REVERT, at(-600)),
        history=(Configuration(at(-700), {"a": 20}, 10.0, 10.0),),
        record_due=False,
        converged_fraction=1.0,
        converged_jobs=frozenset({"a"}),
        models={"a": fitted(views)},
    )


@pytest.mark.parametrize(
    ("executors", "need", "min_fraction"),
    [
        (20, 4, 0.2),
        (5, 4, 0.2),  # one of five is exactly 20 %
        (4, None, 0.2),  # needs all it has
        (5, None, 0.3),  # one of five is less than 30 %
    ],
)
def test_model_need_for_give_back(executors: int, need: int | None, min_fraction: float) -> None:
    # 1000 rows/s (1200 with headroom), 0.5 s overhead: latency 0.75 / (1 - 2.4/n) <= 2
    # needs n >= 3.84 → 4 executors.
    slo = SLO(latency_ms=2000.0)
    views = [model_job(executors, 1000.0, slo, reported=at(10 * k)) for k in range(3)]
    settings = HengeSettings(give_back_min_fraction=min_fraction, give_back_headroom=0.2)
    assert model_need(views[-1], fitted(views), settings) == need


def test_model_need_keeps_the_default_give_back_headroom_of_twice_the_input() -> None:
    # At 2,000 rows/s (1,000 measured, headroom 1.0): latency 0.75 / (1 - 4/n) <= 2 needs
    # n >= 6.4 → 7 executors, where 20 % headroom would give back down to 4.
    slo = SLO(latency_ms=2000.0)
    views = [model_job(20, 1000.0, slo, reported=at(10 * k)) for k in range(3)]
    assert HengeSettings().give_back_headroom == 1.0
    assert model_need(views[-1], fitted(views), HengeSettings()) == 7


def test_give_back_when_converged_and_undo_when_slo_lost() -> None:
    slo = SLO(latency_ms=2000.0)
    views = [model_job(20, 1000.0, slo, reported=at(10 * k)) for k in range(3)]
    state = _converged_with_model(views)
    snap = snapshot([views[-1]], when=at(30))
    paper_plan, _ = run(paper(), snap, state, at(30))
    assert paper_plan.action is ActionKind.NONE  # the paper never gives back

    plan, state = run(product(give_back_headroom=0.2), snap, state, at(30))
    assert plan.action is ActionKind.RECONFIGURE
    assert "giving back" in plan.reason
    assert [(c.from_executors, c.to_executors) for c in plan.changes] == [(20, 4)]
    assert state.cluster_state is ClusterState.CONVERGED

    # After quiescing, the job misses its SLO: the give-back is undone and not tried again.
    worse = replace(views[-1], executors=4, last_report_at=at(90))
    worse = replace(worse, metrics=replace(worse.metrics, utility=7.0))  # type: ignore[arg-type]
    plan, state = run(product(give_back_headroom=0.2), snapshot([worse], when=at(90)), state,
                      at(90))  # fmt: skip
    assert plan.action is ActionKind.RECONFIGURE
    assert [(c.from_executors, c.to_executors) for c in plan.changes] == [(4, 20)]
    assert state.give_back_blacklist == {"a": at(90 + 3600)}


def test_give_back_kept_when_slo_holds() -> None:
    slo = SLO(latency_ms=2000.0)
    views = [model_job(20, 1000.0, slo, reported=at(10 * k)) for k in range(3)]
    policy = product(give_back_headroom=0.2)
    _, state = run(policy, snapshot([views[-1]], when=at(30)), _converged_with_model(views),
                   at(30))  # fmt: skip
    after = model_job(4, 1000.0, slo, reported=at(90))
    plan, state = run(policy, snapshot([after], when=at(90)), state, at(90))
    assert plan.action is ActionKind.NONE
    assert state.give_back_blacklist == {}
    assert state.last_action is not None
    assert state.last_action.judged
