"""The ingestion bench's verdict: the rate a run shows the server carries, and the goal."""

from __future__ import annotations

import pytest

from scheduler.bench.ingest import IngestResult


def _result(**overrides: object) -> IngestResult:
    values: dict[str, object] = {
        "url": "http://127.0.0.1:8000",
        "agents": 32,
        "seconds": 20.01,
        "batch": 20,
        "offered_per_s": 1000.0,
        "reports": 19_980,
        "errors": 0,
        "reports_per_s": 998.5,
        "p50_ms": 15.0,
        "p90_ms": 30.0,
        "p99_ms": 60.0,
        "max_ms": 110.0,
        "round_delay_p99_s": 0.0,
    }
    values.update(overrides)
    return IngestResult(**values)  # type: ignore[arg-type]


def test_a_set_rate_answered_in_full_counts_as_carried() -> None:
    # Counted up to the last answer, the rate reads a little under the one set.
    result = _result()
    assert result.carried_per_s == 1000.0
    assert result.goal_met
    assert result.to_dict()["goal"] == {
        "reports_per_s": 1000,
        "p99_ms": 100,
        "carried_per_s": 1000.0,
        "met": True,
    }


@pytest.mark.parametrize(
    ("overrides", "carried"),
    [
        ({"errors": 1}, 998.5),  # a window not acknowledged: only what was measured counts
        ({"offered_per_s": None}, 998.5),  # as fast as answered: the rate measured
        ({"offered_per_s": 500.0, "reports_per_s": 500.0}, 500.0),  # a rate below the goal
    ],
)
def test_the_goal_needs_the_rate_carried(overrides: dict[str, object], carried: float) -> None:
    result = _result(**overrides)
    assert result.carried_per_s == carried
    assert not result.goal_met


def test_the_goal_needs_the_latency_and_the_rounds() -> None:
    assert not _result(p99_ms=100.0).goal_met
    assert not _result(round_delay_p99_s=1.0).goal_met
    assert _result(round_delay_p99_s=None).goal_met  # a server the bench did not start
