"""Utility functions (thesis §2.5.1, DESIGN §2): knee values, the other shapes, hybrid SLOs,
validation, and the properties every shape must keep."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.core.slo import (
    SLO,
    LatencyStat,
    Shape,
    SLOError,
    UtilityShape,
    meets_slo,
    slo_from_mapping,
    utility,
    validate_slo,
)

JUICE = SLO(juice=1.0)
LATENCY = SLO(latency_ms=60.0)


@pytest.mark.parametrize(
    ("juice", "expected"),
    [(0.0, 0.0), (0.25, 2.5), (0.5, 5.0), (0.9, 9.0), (1.0, 10.0), (1.2, 10.0)],
)
def test_knee_juice_utility_is_linear_from_the_origin_eq_2_1(juice: float, expected: float):
    assert utility(JUICE, 10, juice, None) == pytest.approx(expected)


def test_knee_juice_threshold_below_one_plateaus_at_the_threshold():
    slo = SLO(juice=0.8)
    assert utility(slo, 10, 0.4, None) == pytest.approx(5.0)
    assert utility(slo, 10, 0.8, None) == pytest.approx(10.0)
    assert utility(slo, 10, 0.95, None) == pytest.approx(10.0)


@pytest.mark.parametrize(
    ("latency", "expected"),
    [(30.0, 35.0), (60.0, 35.0), (120.0, 17.5), (240.0, 8.75), (600.0, 3.5), (math.inf, 0.0)],
)
def test_knee_latency_utility_is_hyperbolic_eq_2_2(latency: float, expected: float):
    assert utility(LATENCY, 35, None, latency) == pytest.approx(expected)


def test_hybrid_slo_averages_the_two_utilities():
    slo = SLO(juice=1.0, latency_ms=100.0)
    assert utility(slo, 20, 0.5, 200.0) == pytest.approx(20 * (0.5 + 0.5) / 2)
    assert utility(slo, 20, 1.0, 50.0) == pytest.approx(20)


def test_missing_metric_earns_nothing_for_its_objective():
    assert utility(JUICE, 10, None, None) == 0.0
    assert utility(SLO(juice=1.0, latency_ms=100.0), 10, 1.0, None) == pytest.approx(5.0)


def test_linear_shape_ramps_between_zero_point_and_threshold():
    juice = SLO(juice=1.0, shape=UtilityShape(Shape.LINEAR, juice_zero_at=0.5))
    assert utility(juice, 10, 0.5, None) == 0.0
    assert utility(juice, 10, 0.75, None) == pytest.approx(5.0)
    latency = SLO(latency_ms=100.0, shape=UtilityShape(Shape.LINEAR))  # zero at 2× threshold
    assert utility(latency, 10, None, 150.0) == pytest.approx(5.0)
    assert utility(latency, 10, None, 250.0) == 0.0


def test_step_shape_is_all_or_its_floor():
    slo = SLO(latency_ms=100.0, shape=UtilityShape(Shape.STEP, step_low=0.2))
    assert utility(slo, 10, None, 100.0) == 10.0
    assert utility(slo, 10, None, 100.1) == pytest.approx(2.0)


def test_piecewise_shape_interpolates_and_is_flat_outside():
    slo = SLO(juice=0.9, shape=UtilityShape(Shape.PIECEWISE, juice_points=((0.5, 0.0), (0.9, 1.0))))
    validate_slo(slo)
    assert utility(slo, 10, 0.3, None) == 0.0
    assert utility(slo, 10, 0.7, None) == pytest.approx(5.0)
    assert utility(slo, 10, 1.0, None) == pytest.approx(10.0)


def test_meets_slo_when_utility_equals_priority():
    assert meets_slo(utility(LATENCY, 35, None, 59.0), 35)
    assert not meets_slo(utility(LATENCY, 35, None, 61.0), 35)


@pytest.mark.parametrize(
    ("slo", "field"),
    [
        (SLO(), "slo"),
        (SLO(juice=0.0), "slo.juice"),
        (SLO(juice=1.5), "slo.juice"),
        (SLO(latency_ms=-1.0), "slo.latency_ms"),
        (SLO(juice=1.0, shape=UtilityShape(Shape.PIECEWISE, juice_points=((0.2, 0.5), (1.0, 0.3)))),
         "slo.utility.juice_points"),
        (SLO(latency_ms=50.0, shape=UtilityShape(
            Shape.PIECEWISE, latency_points=((50, 1.0), (80, 0.2), (90, 0.4)))),
         "slo.utility.latency_points"),
        (SLO(juice=1.0, shape=UtilityShape(Shape.PIECEWISE, juice_points=((0.2, 0.0), (1.0, 0.8)))),
         "slo.utility.juice_points"),
        (SLO(latency_ms=50.0, shape=UtilityShape(Shape.LINEAR, latency_zero_at_ms=40.0)),
         "slo.utility.latency_zero_at_ms"),
        (SLO(juice=1.0, shape=UtilityShape(Shape.KNEE, juice_points=((0, 0), (1, 1)))),
         "slo.utility"),
    ],
)  # fmt: skip
def test_invalid_slo_is_rejected_naming_the_field(slo: SLO, field: str):
    with pytest.raises(SLOError) as error:
        validate_slo(slo)
    assert error.value.field == field


def test_slo_round_trips_from_its_stored_form():
    stored = {"latency_ms": 2000, "latency_stat": "p95", "juice": 1.0,
              "utility": {"shape": "piecewise", "juice_points": [[0.5, 0], [1.0, 1]],
                          "latency_points": [[2000, 1], [6000, 0]]}}  # fmt: skip
    slo = slo_from_mapping(stored)
    validate_slo(slo)
    assert slo.latency_stat is LatencyStat.P95 and slo.shape.kind is Shape.PIECEWISE
    assert slo.shape.latency_points == ((2000.0, 1.0), (6000.0, 0.0))


# ---- properties --------------------------------------------------------------------------------

priorities = st.floats(min_value=0.1, max_value=1000)
juices = st.floats(min_value=-0.5, max_value=2.0, allow_nan=False)
latencies = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)


@st.composite
def slos(draw: st.DrawFn) -> SLO:
    kind = draw(st.sampled_from(list(Shape)))
    juice = draw(st.one_of(st.none(), st.floats(min_value=0.05, max_value=1.0)))
    latency = (
        draw(st.floats(min_value=1.0, max_value=1e4))
        if juice is None
        else draw(st.one_of(st.none(), st.floats(min_value=1.0, max_value=1e4)))
    )
    shape = UtilityShape(kind)
    if kind is Shape.PIECEWISE:
        shape = UtilityShape(
            kind,
            juice_points=((juice / 2, draw(st.floats(0, 0.9))), (juice, 1.0)) if juice else (),
            latency_points=((latency, 1.0), (latency * 3, draw(st.floats(0, 0.9))))
            if latency
            else (),
        )
    elif kind is Shape.STEP:
        shape = UtilityShape(kind, step_low=draw(st.floats(0, 0.99)))
    slo = SLO(juice=juice, latency_ms=latency, shape=shape)
    validate_slo(slo)
    return slo


@given(slos(), priorities, juices, juices, latencies)
def test_utility_is_monotone_in_juice_and_within_zero_and_priority(
    slo: SLO, priority: float, a: float, b: float, latency: float
):
    low, high = sorted((a, b))
    u_low = utility(slo, priority, low, latency)
    u_high = utility(slo, priority, high, latency)
    assert 0.0 <= u_low <= u_high + 1e-9 * priority
    assert u_high <= priority * (1 + 1e-12)


@given(slos(), priorities, juices, latencies, latencies)
def test_utility_never_rises_as_latency_rises(
    slo: SLO, priority: float, juice: float, a: float, b: float
):
    fast, slow = sorted((a, b))
    u_fast = utility(slo, priority, juice, fast)
    u_slow = utility(slo, priority, juice, slow)
    assert 0.0 <= u_slow <= u_fast + 1e-9 * priority <= priority * (1 + 1e-9)
