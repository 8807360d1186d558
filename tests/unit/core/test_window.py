"""From reports to per-window assessments and sliding-window job metrics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.core.juice import Edge
from scheduler.core.report import (
    BatchReport,
    LatencyReport,
    Report,
    SourceReport,
    report_from_document,
)
from scheduler.core.slo import SLO, LatencyStat
from scheduler.core.window import assess_report, batch_fit, select_window, window_metrics

T0 = datetime(2026, 1, 1, tzinfo=UTC)
JUICE_SLO = SLO(juice=1.0)
LATENCY_SLO = SLO(latency_ms=10_000)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def report(
    start: float,
    *,
    length: float = 10,
    executors: int = 4,
    busy_core_ms: float = 20_000,
    sources: tuple[SourceReport, ...] = (),
    batches: tuple[BatchReport, ...] = (),
    latency: LatencyReport | None = None,
    edges: tuple[Edge, ...] = (),
    max_parallelism: int | None = None,
) -> Report:
    return Report(
        window_start=at(start),
        window_end=at(start + length),
        executors=executors,
        cores_per_executor=1,
        busy_core_ms=busy_core_ms,
        max_parallelism=max_parallelism,
        sources=sources,
        batches=batches,
        latency_ms=latency,
        edges=edges,
    )


# --- one report -----------------------------------------------------------------------------


def test_assess_design_example_report() -> None:
    r = report(
        0,
        busy_core_ms=23_000,
        sources=(SourceReport("events", 20_000, 19_000, 3_000),),
        batches=(BatchReport(at(0), at(4), 9_500), BatchReport(at(5), at(9), 9_500)),
        latency=LatencyReport(mean=1_200, p95=1_800, p99=2_100),
        max_parallelism=8,
    )
    slo = SLO(juice=1.0, latency_ms=1_000, latency_stat=LatencyStat.P95)
    a = assess_report(r, slo, priority=35)
    assert r.duration_s == 10
    assert a.juice == pytest.approx(0.95)
    assert a.juice_raw == pytest.approx(0.95)
    assert a.latency_ms == 1_800  # exact p95 preferred over the estimate
    assert a.capacity == pytest.approx(23_000 / (10_000 * 4))
    assert a.input_rate == pytest.approx(2_000)
    assert a.processed_rate == pytest.approx(1_900)
    # hybrid: mean of 0.95 / 1.0 and 1000 / 1800
    assert a.utility == pytest.approx(35 * (0.95 + 1_000 / 1_800) / 2)


def test_assess_prefers_edges_for_juice() -> None:
    r = report(
        0,
        sources=(SourceReport("src", 100, 100),),
        edges=(Edge("src", "filter", 100, 60),),
    )
    a = assess_report(r, JUICE_SLO, priority=10)
    assert a.juice == pytest.approx(0.6)
    assert a.utility == pytest.approx(6.0)


def test_assess_backlog_delta_needs_the_previous_report() -> None:
    previous = report(0, sources=(SourceReport("k", None, 1_000, backlog_rows=1_000),))
    current = report(10, sources=(SourceReport("k", None, 1_000, backlog_rows=2_000),))
    alone = assess_report(current, JUICE_SLO, priority=10)
    assert alone.juice is None
    assert alone.utility == 0.0  # a juice SLO earns nothing without juice
    a = assess_report(current, JUICE_SLO, priority=10, previous=previous)
    assert a.juice == pytest.approx(0.5)
    assert a.input_rate == pytest.approx(200)


def test_assess_estimates_latency_from_batches() -> None:
    previous = report(0, batches=(BatchReport(at(0), at(3), 10),))
    current = report(10, batches=(BatchReport(at(10), at(13), 10),))
    a = assess_report(current, LATENCY_SLO, priority=5, previous=previous)
    assert a.latency_ms == pytest.approx(8_000)  # 13 - (0 + 10) / 2 s
    assert a.utility == 5


def test_assess_catching_up_keeps_raw_juice_above_one() -> None:
    previous = report(0, sources=(SourceReport("k", None, 0, backlog_rows=5_000),))
    current = report(10, sources=(SourceReport("k", None, 4_000, backlog_rows=2_000),))
    a = assess_report(current, JUICE_SLO, priority=1, previous=previous)
    assert a.juice_raw == pytest.approx(4.0)  # 1000 arrived, 4000 completed
    assert a.juice == 1.0


# --- the sliding window ---------------------------------------------------------------------


NOW = at(60)


def test_window_sums_rows_rather_than_averaging_ratios() -> None:
    reports = [
        report(40, sources=(SourceReport("s", 100, 50),)),
        report(50, sources=(SourceReport("s", 900, 900),)),
    ]
    m = window_metrics(reports, JUICE_SLO, priority=10, now=NOW)
    assert m is not None
    assert m.juice == pytest.approx(950 / 1_000)  # not (0.5 + 1.0) / 2
    assert m.utility == pytest.approx(9.5)
    assert m.input_rate == pytest.approx(1_000 / 20)
    assert m.processed_rate == pytest.approx(950 / 20)
    assert m.windows == 2
    assert m.behind_fraction == pytest.approx(0.5)


def test_window_drops_reports_older_than_the_window() -> None:
    old = [report(t, sources=(SourceReport("s", 1_000, 0),)) for t in (-20, -10)]
    fresh = [report(t, sources=(SourceReport("s", 1_000, 1_000),)) for t in (0, 10, 40)]
    m = window_metrics(old + fresh, JUICE_SLO, priority=10, now=NOW)
    assert m is not None
    assert m.windows == 3  # ends at 10, 20, 50; the ones ending at -10 and 0 are out
    assert m.juice == 1.0
    assert window_metrics(old, JUICE_SLO, priority=10, now=NOW) is None
    assert window_metrics([], JUICE_SLO, priority=10, now=NOW) is None
    # A shorter window keeps only the last report.
    short = window_metrics(old + fresh, JUICE_SLO, priority=10, now=NOW, window_s=15)
    assert short is not None and short.windows == 1


def test_window_boundaries() -> None:
    reports = [report(t) for t in (-10, 0, 50, 60)]  # ends at 0, 10, 60, 70
    inside, baseline = select_window(reports, NOW, 60)
    assert [r.window_end for r in inside] == [at(10), at(60)]  # (now - 60, now]
    assert baseline is not None and baseline.window_end == at(0)


def test_falling_behind_has_juice_below_one() -> None:
    # Each batch processes everything it read (1000 rows per sub-window), but the source's
    # backlog grows by 500 rows every sub-window: 1500 rows arrive for every 1000 completed.
    reports = [
        report(
            t,
            sources=(SourceReport("k", None, 1_000, backlog_rows=500.0 * (i + 1)),),
            batches=(BatchReport(at(t), at(t + 9), 1_000),),
        )
        for i, t in enumerate(range(-10, 60, 10))
    ]
    for r in reports:
        assert sum(b.rows for b in r.batches) == r.processed_rows
    m = window_metrics(reports, JUICE_SLO, priority=10, now=NOW)
    assert m is not None
    assert m.juice == pytest.approx(1_000 / 1_500)
    assert m.juice < 1
    assert m.behind_fraction == 1.0
    assert m.backlog_rows == 3_500  # latest
    assert m.input_rate == pytest.approx(150)
    assert m.processed_rate == pytest.approx(100)


def test_window_capacity_rates_and_shape() -> None:
    reports = [
        report(
            0,
            executors=2,
            busy_core_ms=10_000,
            max_parallelism=8,
            sources=(SourceReport("s", 100, 100),),
            batches=(BatchReport(at(0), at(2), 50), BatchReport(at(5), at(7), 50)),
        ),
        report(
            10,
            executors=4,
            busy_core_ms=30_000,
            max_parallelism=None,
            sources=(SourceReport("s", 100, 100),),
            batches=(BatchReport(at(10), at(14), 50), BatchReport(at(15), at(19), 50)),
        ),
    ]
    m = window_metrics(reports, LATENCY_SLO, priority=3, now=at(20))
    assert m is not None
    assert m.capacity == pytest.approx(40_000 / (10_000 * 2 + 10_000 * 4))
    assert m.busy_core_s == pytest.approx(40)
    assert m.max_parallelism == 8  # latest non-null
    assert m.executors_reported == 4  # latest
    assert m.mean_batch_s == pytest.approx(3.0)
    assert m.trigger_interval_s == pytest.approx(5.0)
    assert m.backlog_rows is None
    # Latencies: batches of 50 rows with previous starts -5 (estimated gap), 0, 5, 10 s.
    # Means: 2-(-5+0)/2=4.5, 7-(0+5)/2=4.5, 14-(5+10)/2=6.5, 19-(10+15)/2=6.5 -> 5.5 s.
    assert m.latency_ms == pytest.approx(5_500)
    assert m.utility == 3


def test_window_latency_uses_slo_statistic_and_exact_values() -> None:
    reports = [
        report(0, sources=(SourceReport("s", 100, 100),), latency=LatencyReport(100, 300, 900)),
        report(10, sources=(SourceReport("s", 300, 300),), latency=LatencyReport(200, 500, 990)),
    ]
    p95_slo = SLO(latency_ms=400, latency_stat=LatencyStat.P95)
    m = window_metrics(reports, p95_slo, priority=4, now=at(20))
    assert m is not None
    assert m.latency_ms == pytest.approx((100 * 300 + 300 * 500) / 400)  # row-weighted
    assert m.utility == pytest.approx(4 * 400 / 450)
    mean = window_metrics(reports, SLO(latency_ms=400), priority=4, now=at(20))
    assert mean is not None and mean.latency_ms == pytest.approx(175)


def test_window_juice_from_summed_edges() -> None:
    reports = [
        report(0, edges=(Edge("src", "a", 100, 100), Edge("a", "sink", 100, 0))),
        report(10, edges=(Edge("src", "a", 100, 100), Edge("a", "sink", 100, 100))),
    ]
    m = window_metrics(reports, JUICE_SLO, priority=2, now=at(20))
    assert m is not None
    assert m.juice == pytest.approx(0.5)
    assert m.behind_fraction == pytest.approx(0.5)
    assert m.input_rate == pytest.approx(10)
    assert m.processed_rate is None


@given(
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=10_000), st.integers(0, 10_000)),
        min_size=1,
        max_size=12,
    )
)
def test_window_juice_in_unit_interval_and_raw_is_summed_ratio(
    counts: list[tuple[int, int]],
) -> None:
    reports = [
        report(-10.0 * i, sources=(SourceReport("s", arrived, done),))
        for i, (arrived, done) in enumerate(counts)
    ]
    m = window_metrics(reports, JUICE_SLO, priority=1, now=at(10))
    assert m is not None
    assert m.juice is not None and m.juice_raw is not None
    assert 0.0 <= m.juice <= 1.0
    kept = counts[:6]  # reports ending at 10, 0, ..., -40 are inside a 60 s window
    arrived = sum(a for a, _ in kept)
    done = sum(d for _, d in kept)
    assert m.windows == len(kept)
    expected = done / arrived if arrived else 1.0
    assert m.juice_raw == pytest.approx(expected)


def test_the_per_batch_overhead_is_fitted_from_batches_of_varied_sizes() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    # 0.35 s per batch plus 2 ms per row (on the job's cores).
    batches = [
        BatchReport(start, start + timedelta(seconds=0.35 + rows * 0.002), rows)
        for rows in (100.0, 400.0, 1500.0, 3000.0)
    ]
    fit = batch_fit(batches)
    assert fit is not None
    assert fit.overhead_s == pytest.approx(0.35)
    assert fit.row_s == pytest.approx(0.002)
    alike = [BatchReport(start, start + timedelta(seconds=1.0), 500.0)] * 5
    assert batch_fit(alike) is None  # the fixed part cannot be told from the rest
    assert batch_fit(batches[:2]) is None


def test_whether_a_job_keeps_state_is_read_from_its_latest_report_that_tells() -> None:
    def stated(start: float, state: dict[str, float | None] | None) -> Report:
        doc = {
            "window_start": at(start).isoformat(),
            "window_end": at(start + 10).isoformat(),
            "executors": 2,
            "busy_core_ms": 1_000,
            **({"state": state} if state is not None else {}),
        }
        return report_from_document(doc)

    none, empty = stated(0, {"rows": 0, "memory_bytes": 0}), stated(10, {"rows": None})
    kept, untold = stated(20, {"rows": 0, "memory_bytes": 4096}), stated(30, None)
    assert (none.holds_state, empty.holds_state, kept.holds_state) == (False, None, True)
    assert untold.holds_state is None

    def holds(*reports: Report) -> bool | None:
        m = window_metrics(list(reports), LATENCY_SLO, priority=3, now=at(40))
        assert m is not None
        return m.holds_state

    assert holds(none, empty) is False
    assert holds(none, empty, kept, untold) is True
    assert holds(kept, stated(30, {"rows": 0, "memory_bytes": 0})) is False
    assert holds(empty, untold) is None
