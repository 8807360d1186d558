"""The per-job utility series: replaced whole each round, in memory or through a shared file."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from scheduler.prometheus import JOB_UTILITY_FILE, JobUtilities


def exported(collector: JobUtilities) -> str:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode()


def test_a_round_replaces_the_series_of_the_one_before():
    utilities = JobUtilities()
    utilities.set([("j1", "a", 3.0), ("j2", "b", 1.5)])
    utilities.set([("j2", "b", 2.0)])
    text = exported(utilities)
    assert 'henge_job_utility{job="b",job_id="j2"} 2.0' in text
    assert "j1" not in text


def test_a_shared_directory_carries_the_series_to_other_processes(tmp_path: Path):
    writer, reader = JobUtilities(tmp_path), JobUtilities(tmp_path)
    assert reader.rows() == []  # no round yet
    writer.set([("j1", "a", 3.0), ("j2", "b", 1.5)])
    assert reader.rows() == [("j1", "a", 3.0), ("j2", "b", 1.5)]
    writer.set([("j2", "b", 2.0)])
    assert 'henge_job_utility{job="b",job_id="j2"} 2.0' in exported(reader)
    assert "j1" not in exported(reader)
    assert [p.name for p in tmp_path.iterdir()] == [JOB_UTILITY_FILE]  # no scratch file left
