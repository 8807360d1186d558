"""Operator capacity and congestion (eq. 2.3 adapted)."""

from __future__ import annotations

import math

import pytest

from scheduler.core.capacity import CAPACITY_THRESHOLD, capacity, is_congested, job_capacity


def test_capacity_is_busy_over_available_core_time() -> None:
    # DESIGN §5.1 example: 23 s busy over a 10 s window on 4 cores.
    assert capacity(23_000, 10_000, 4) == pytest.approx(0.575)
    assert capacity(0, 10_000, 4) == 0.0


def test_capacity_undefined_without_cores_or_time() -> None:
    assert capacity(100, 10_000, 0) is None
    assert capacity(100, 0, 4) is None
    assert capacity(math.nan, 10_000, 4) is None


def test_job_capacity_is_the_most_congested_stage() -> None:
    assert job_capacity([0.1, None, 0.7, 0.4]) == 0.7
    assert job_capacity([None]) is None


def test_congestion_threshold() -> None:
    assert CAPACITY_THRESHOLD == 0.3
    assert is_congested(0.31)
    assert not is_congested(0.3)
    assert not is_congested(None)
    assert is_congested(0.6, threshold=0.5)
    assert not is_congested(0.4, threshold=0.5)
