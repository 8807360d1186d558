"""Juice (thesis §2.7): the worked examples, the micro-batch form, and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.core.juice import (
    Edge,
    SourceFlow,
    acked_topology_juice,
    arrived_rows,
    microbatch_juice,
    operator_juice,
    source_contributions,
    source_flows,
    topology_juice,
)
from scheduler.core.report import SourceReport

# Fig. 2.1 / Example 2.1: spout -> A; A forks 8K/8K to B and C; C executes only 6K; B, C -> D.
FIG_2_1 = [
    Edge(parent="spout", child="A", sent=10_000, executed=10_000),
    Edge(parent="A", child="B", sent=8_000, executed=8_000),
    Edge(parent="A", child="C", sent=8_000, executed=6_000),
    Edge(parent="B", child="D", sent=8_000, executed=8_000),
    Edge(parent="C", child="D", sent=6_000, executed=6_000),
]

# Fig. 2.6 / Example 2.2: spout1 -> A (A executes half); spout2 -> D -> E (E executes half);
# E splits evenly to B and F (F executes 80 %); A and E merge into B; B -> C (sink); F is a sink.
FIG_2_6 = [
    Edge(parent="spout1", child="A", sent=10_000, executed=5_000),
    Edge(parent="A", child="B", sent=5_000, executed=5_000),
    Edge(parent="spout2", child="D", sent=10_000, executed=10_000),
    Edge(parent="D", child="E", sent=10_000, executed=5_000),
    Edge(parent="E", child="B", sent=2_500, executed=2_500),
    Edge(parent="E", child="F", sent=2_500, executed=2_000),
    Edge(parent="B", child="C", sent=7_500, executed=7_500),
]


def test_example_2_1_operator_juice() -> None:
    juice = operator_juice(FIG_2_1)
    assert juice["spout"] == 1.0
    assert juice["A"] == pytest.approx(1.0)
    assert juice["B"] == pytest.approx(0.5)  # T is 16K (A's output on both edges), not 8K
    assert juice["C"] == pytest.approx(0.375)
    assert juice["D"] == pytest.approx(0.875)


def test_example_2_1_topology_juice() -> None:
    assert topology_juice(FIG_2_1) == pytest.approx(0.875)


def test_example_2_1_without_d_sinks_b_and_c_sum() -> None:
    # "If B and C were sinks (if D were absent), their juice values would sum up to the
    # topology's juice."
    assert topology_juice(FIG_2_1[:3]) == pytest.approx(0.5 + 0.375)


def test_example_2_2_split_and_merge() -> None:
    juice = operator_juice(FIG_2_6)
    assert juice["A"] == pytest.approx(0.5)
    assert juice["D"] == pytest.approx(1.0)
    assert juice["E"] == pytest.approx(0.5)
    assert juice["B"] == pytest.approx(0.75)
    assert juice["F"] == pytest.approx(0.2)
    assert juice["C"] == pytest.approx(0.75)
    assert topology_juice(FIG_2_6) == pytest.approx(0.475)


def test_per_source_contributions_average_to_topology_juice() -> None:
    contributions = source_contributions(FIG_2_6)
    assert contributions == pytest.approx({"spout1": 0.5, "spout2": 0.45})
    assert sum(contributions.values()) / 2 == pytest.approx(topology_juice(FIG_2_6))


def test_lossless_chain_has_juice_one() -> None:
    edges = [Edge("s", "a", 100, 100), Edge("a", "b", 40, 40)]
    assert topology_juice(edges) == 1.0


def test_filter_that_emits_nothing_lost_nothing() -> None:
    # A executes every tuple but sends nothing on: nothing was lost downstream.
    edges = [Edge("s", "a", 100, 100), Edge("a", "sink", 0, 0)]
    assert topology_juice(edges) == 1.0


def test_no_input_is_juice_one() -> None:
    assert topology_juice([Edge("s", "a", 0, 0)]) == 1.0
    assert topology_juice([]) == 1.0


def test_edge_order_does_not_matter() -> None:
    assert topology_juice(list(reversed(FIG_2_6))) == pytest.approx(0.475)


def test_parallel_edges_between_same_pair_add_up() -> None:
    one = [Edge("s", "a", 100, 60)]
    two = [Edge("s", "a", 50, 30), Edge("s", "a", 50, 30)]
    assert topology_juice(one) == pytest.approx(topology_juice(two)) == pytest.approx(0.6)


def test_cycle_is_rejected_with_a_clear_message() -> None:
    edges = [Edge("s", "a", 10, 10), Edge("a", "b", 10, 10), Edge("b", "a", 10, 10)]
    with pytest.raises(ValueError, match="cycle"):
        topology_juice(edges)
    with pytest.raises(ValueError, match="cycle"):
        operator_juice([Edge("a", "a", 1, 1)])
    with pytest.raises(ValueError, match="cycle"):
        topology_juice([Edge("a", "b", 1, 1), Edge("b", "a", 1, 1)])


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_bad_counts_are_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="'s' -> 'a'"):
        topology_juice([Edge("s", "a", bad, 1)])
    with pytest.raises(ValueError, match="executed"):
        topology_juice([Edge("s", "a", 1, bad)])


def test_acked_variant_scales_by_acked_over_sent() -> None:
    # eq. 2.7: 0.875 * 9K acked / 10K sent by the spout
    assert acked_topology_juice(FIG_2_1, acked=9_000) == pytest.approx(0.875 * 0.9)
    assert acked_topology_juice([Edge("s", "a", 0, 0)], acked=0) == 1.0
    with pytest.raises(ValueError):
        acked_topology_juice(FIG_2_1, acked=-1)


@st.composite
def dags(draw: st.DrawFn) -> list[Edge]:
    """Random DAGs on nodes n0..nk (edges only go from lower to higher index), with
    executed <= sent on every edge."""
    n = draw(st.integers(min_value=2, max_value=8))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=20))
    edges = []
    for i, j in chosen:
        sent = draw(st.floats(min_value=0, max_value=1e6, allow_nan=False))
        fraction = draw(st.floats(min_value=0, max_value=1))
        edges.append(Edge(f"n{i}", f"n{j}", sent, sent * fraction))
    return edges


@given(dags())
def test_juice_in_unit_interval_when_nothing_is_over_executed(edges: list[Edge]) -> None:
    value = topology_juice(edges)
    assert -1e-12 <= value <= 1.0 + 1e-9
    for j in operator_juice(edges).values():
        assert j >= -1e-12
    contributions = source_contributions(edges)
    assert sum(contributions.values()) / len(contributions) == pytest.approx(value, abs=1e-9)


@given(dags())
def test_lossless_dag_has_juice_one(edges: list[Edge]) -> None:
    lossless = [Edge(e.parent, e.child, e.sent, e.sent) for e in edges]
    assert topology_juice(lossless) == pytest.approx(1.0)


# --- Spark micro-batch form ---------------------------------------------------------------


def test_microbatch_uses_arrived_rows() -> None:
    raw, clamped = microbatch_juice([SourceReport("events", 20_000, 19_000, 3_000)]) or (0, 0)
    assert raw == pytest.approx(0.95)
    assert clamped == pytest.approx(0.95)


def test_microbatch_averages_ratios_over_sources_of_summed_rows() -> None:
    sources = [
        SourceReport("a", 100, 100),
        SourceReport("b", 100, 50),
        SourceReport("a", 300, 300),
        SourceReport("b", 100, 50),
    ]
    result = microbatch_juice(sources)
    assert result is not None
    assert result[0] == pytest.approx((1.0 + 0.5) / 2)


def test_microbatch_uses_backlog_delta_when_arrivals_not_counted() -> None:
    # processed 1000 while the backlog grew 0 -> 500: 1500 rows arrived.
    source = SourceReport("k", None, 1_000, backlog_rows=500)
    assert arrived_rows(source, backlog_before=0) == 1_500
    assert arrived_rows(source, backlog_before=None) is None
    result = microbatch_juice([source], backlog_before={"k": 0})
    assert result is not None
    assert result[0] == pytest.approx(1_000 / 1_500)


def test_microbatch_backlog_chains_across_sub_windows() -> None:
    entries = [
        SourceReport("k", None, 1_000, backlog_rows=0),  # no baseline: left out
        SourceReport("k", None, 1_000, backlog_rows=1_000),  # 2000 arrived
        SourceReport("k", None, 1_000, backlog_rows=2_000),  # 2000 arrived
    ]
    flows = source_flows(entries)
    assert flows == {"k": SourceFlow("k", 4_000, 2_000)}


def test_microbatch_draining_backlog_exceeds_one_raw_but_clamps() -> None:
    result = microbatch_juice([SourceReport("k", None, 2_000, backlog_rows=0)], {"k": 1_000})
    assert result is not None
    raw, clamped = result
    assert raw == pytest.approx(2.0)
    assert clamped == 1.0


def test_microbatch_no_arrivals_is_one_and_unknown_is_none() -> None:
    assert microbatch_juice([SourceReport("k", 0, 0)]) == (1.0, 1.0)
    assert microbatch_juice([SourceReport("k", None, 10)]) is None
    assert microbatch_juice([]) is None


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.floats(min_value=0, max_value=1e7),
            st.floats(min_value=0, max_value=1e7),
        ),
        min_size=1,
    )
)
def test_microbatch_clamped_in_unit_interval(rows: list[tuple[str, float, float]]) -> None:
    result = microbatch_juice([SourceReport(n, arrived, done) for n, arrived, done in rows])
    assert result is not None
    raw, clamped = result
    assert raw >= 0
    assert 0.0 <= clamped <= 1.0
    assert clamped == min(1.0, raw)
