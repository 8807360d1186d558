"""The decide() overhead benchmark: synthetic snapshots and the shape of its result."""

from __future__ import annotations

from scheduler.bench.overhead import measure_decide, synthetic_snapshot
from scheduler.core.model import JobStatus


def test_synthetic_snapshot_is_reproducible_and_sized() -> None:
    first = synthetic_snapshot(50, seed=7)
    assert first == synthetic_snapshot(50, seed=7)
    assert first != synthetic_snapshot(50, seed=8)
    assert len(first.jobs) == 50
    assert len({j.job_id for j in first.jobs}) == 50
    assert all(j.status is JobStatus.ADMITTED and j.metrics is not None for j in first.jobs)
    used = sum(j.executors * j.cores_per_executor for j in first.jobs)
    assert first.cluster.total_cores >= used
    assert first.cluster.free_cores > 0


def test_measure_decide_reports_median_and_p99_per_size() -> None:
    result = measure_decide(sizes=(10, 40), repeats=3)
    assert set(result["decide_ms"]) == {"10", "40"}
    for timing in result["decide_ms"].values():
        assert 0 < timing["median"] <= timing["p99"]
        assert timing["median_collecting"] > 0
        assert timing["runs"] == 3
