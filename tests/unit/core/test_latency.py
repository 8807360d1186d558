"""The micro-batch latency estimator (DESIGN §2 "Latency")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.core.latency import (
    BatchLatency,
    batch_latencies,
    batch_latency,
    estimate_latency_ms,
    mean_trigger_interval_s,
    percentile_latency_ms,
    pooled_trigger_interval_s,
    report_latency_ms,
)
from scheduler.core.report import BatchReport, LatencyReport
from scheduler.core.slo import LatencyStat

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def batch(start: float, end: float, rows: float, **kw: float) -> BatchReport:
    backlog = kw.get("backlog")
    return BatchReport(at(start), at(end), rows, backlog_at_start=backlog)


def test_single_batch_formulas() -> None:
    # s_{k-1} = 0 s, s_k = 10 s, e_k = 13 s: rows arrived in [0, 10], latencies in [3 s, 13 s].
    d = batch_latency(batch(10, 13, 200), previous_start=at(0))
    assert d.mean_ms == pytest.approx(13_000 - (0 + 10_000) / 2)  # e - (s_{k-1}+s_k)/2 = 8 s
    assert d.percentile_ms(95) == pytest.approx(13_000 - 10_000 + 0.95 * 10_000)  # 12.5 s
    assert d.percentile_ms(99) == pytest.approx(12_900)


def test_backlog_adds_waiting_time() -> None:
    # 500 rows left waiting at 100 rows/s: 5 s more for every row of the batch.
    d = batch_latency(batch(10, 13, 200, backlog=500), at(0), arrival_rate=100)
    assert d.mean_ms == pytest.approx(8_000 + 5_000)
    # Without a rate, the batch's own rows over its interval (200 rows / 10 s) stand in.
    d = batch_latency(batch(10, 13, 200, backlog=500), at(0))
    assert d.mean_ms == pytest.approx(8_000 + 25_000)


# Starts 0, 10, 20 s; ends 4, 13, 25 s; 100, 200, 100 rows.
BATCHES = [batch(0, 4, 100), batch(10, 13, 200), batch(20, 25, 100)]


def test_window_mean_is_row_weighted_hand_computed() -> None:
    # First batch: no previous start known -> interval = mean gap between starts (10 s):
    # latencies [4, 14] s, mean 9 s. Second: [3, 13] s, mean 8 s. Third: [5, 15] s, mean 10 s.
    expected = (100 * 9_000 + 200 * 8_000 + 100 * 10_000) / 400
    assert expected == 8_750
    assert estimate_latency_ms(BATCHES, LatencyStat.MEAN) == pytest.approx(8_750)
    # Same answer when the previous start is given explicitly, and in any input order.
    assert estimate_latency_ms(
        list(reversed(BATCHES)), LatencyStat.MEAN, previous_start=at(-10)
    ) == pytest.approx(8_750)


def test_window_percentile_is_mixture_percentile_hand_computed() -> None:
    # Batches 2 and 3 with equal rows: uniform [3, 13] s and [5, 15] s, half the rows each.
    # CDF at 13 s is 0.5 + 0.5 * 0.8 = 0.9; p95 solves 0.5 + 0.5 * (x - 5) / 10 = 0.95 -> 14 s.
    # The median solves 0.5 (x-3)/10 + 0.5 (x-5)/10 = 0.5 -> 9 s.
    two = [batch(10, 13, 100), batch(20, 25, 100)]
    dists = batch_latencies(two, previous_start=at(0))
    assert percentile_latency_ms(dists, 95) == pytest.approx(14_000, abs=1e-3)
    assert percentile_latency_ms(dists, 50) == pytest.approx(9_000, abs=1e-3)
    assert estimate_latency_ms(two, LatencyStat.P95, previous_start=at(0)) == pytest.approx(
        14_000, abs=1e-3
    )
    assert percentile_latency_ms(dists, 100) == pytest.approx(15_000, abs=1e-3)
    assert percentile_latency_ms(dists, 0) == pytest.approx(3_000)


def test_lone_batch_without_history_uses_its_duration_as_interval() -> None:
    # Back-to-back triggering: the batch read what arrived while the previous one (same length)
    # ran, so latencies span [4, 8] s.
    assert estimate_latency_ms([batch(0, 4, 10)], LatencyStat.MEAN) == pytest.approx(6_000)


def test_no_rows_no_latency() -> None:
    assert estimate_latency_ms([], LatencyStat.MEAN) is None
    assert estimate_latency_ms([batch(0, 4, 0)], LatencyStat.P99) is None


def test_exact_latency_is_preferred() -> None:
    exact = LatencyReport(mean=1_200, p95=1_800, p99=None)
    assert report_latency_ms(exact, BATCHES, LatencyStat.MEAN) == 1_200
    assert report_latency_ms(exact, BATCHES, LatencyStat.P95) == 1_800
    # The job did not measure p99: fall back to the estimator.
    estimated = estimate_latency_ms(BATCHES, LatencyStat.P99)
    assert estimated is not None
    assert report_latency_ms(exact, BATCHES, LatencyStat.P99) == pytest.approx(estimated)
    assert report_latency_ms(None, [], LatencyStat.MEAN) is None


def test_trigger_interval() -> None:
    assert mean_trigger_interval_s(BATCHES) == pytest.approx(10.0)
    assert mean_trigger_interval_s(BATCHES[:1]) is None


def test_trigger_interval_of_reports_that_list_only_their_latest_batches() -> None:
    """A 60-s window of six 10-s reports of a 0.2-s trigger, each listing its latest 12 of 50
    batches: the gaps between the lists are not gaps between batches."""
    lists = [
        [batch(w + 0.2 * k, w + 0.2 * k + 0.15, 800) for k in range(38, 50)]
        for w in range(0, 60, 10)
    ]
    everything = [b for one in lists for b in one]
    # read across the lists: (59.8 - 7.6) s over 71 gaps
    assert mean_trigger_interval_s(everything) == pytest.approx(0.735, abs=1e-3)
    assert pooled_trigger_interval_s(lists) == pytest.approx(0.2)


def test_trigger_interval_across_reports_of_one_batch_each() -> None:
    lists = [[batch(10 * w + 1, 10 * w + 4, 5000)] for w in range(4)]
    assert pooled_trigger_interval_s(lists) == pytest.approx(10.0)
    assert pooled_trigger_interval_s([[], lists[0]]) is None


def test_bad_percentile_rejected() -> None:
    with pytest.raises(ValueError):
        percentile_latency_ms([BatchLatency(1, 0, 1)], 101)


@given(
    st.lists(
        st.tuples(
            st.floats(min_value=1, max_value=1e6),
            st.floats(min_value=0, max_value=1e5),
            st.floats(min_value=0, max_value=1e5),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_mixture_percentiles_are_ordered_and_bounded(
    parts: list[tuple[float, float, float]],
) -> None:
    dists = [BatchLatency(rows, low, low + width) for rows, low, width in parts]
    p50 = percentile_latency_ms(dists, 50)
    p95 = percentile_latency_ms(dists, 95)
    p99 = percentile_latency_ms(dists, 99)
    assert p50 is not None and p95 is not None and p99 is not None
    lo = min(d.low_ms for d in dists)
    hi = max(d.high_ms for d in dists)
    tol = 1e-6 * max(1.0, hi)
    assert lo - tol <= p50 <= p95 + tol
    assert p95 <= p99 + tol
    assert p99 <= hi + tol
    # At the p95 value at least 95 % of the rows are at or below it.
    total = sum(d.rows for d in dists)
    assert sum(d.rows * d.cdf(p95 + tol) for d in dists) / total >= 0.95 - 1e-9
