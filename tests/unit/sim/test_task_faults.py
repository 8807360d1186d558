"""Faults diagnosis tells apart in the simulator: a slow executor, a skewed stage; and the task
figures the simulated agents report."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from scheduler.core.report import Report
from scheduler.sim.scenario_keys import ScenarioError

from .world_kit import metrics_at, reports_of, run, scenario, world

SLOW = {"slow_executor": {"at_s": 120, "duration_s": 3000, "factor": 4, "job": "a"}}


def hosts(report: Report) -> dict[str, str | None]:
    return {e.id: e.host for e in report.executor_tasks}


def test_a_slow_executor_straggles_its_job_until_it_is_replaced() -> None:
    # 4 tasks a stage on 4 executors: every stage waits for the slow executor's task.
    w = world(scenario(job={"partitions": 4, "input": {"constant": 500}}, events=[SLOW]))
    reports = reports_of(run(w, 180), "a")
    healthy = metrics_at(w, reports, "a", 120)
    slow = metrics_at(w, reports, "a", 180)
    assert healthy.mean_batch_s == pytest.approx(0.35 + 500 * 1.0 / 4 / 1000, rel=1e-6)
    # one task of each stage takes 4 times as long: the batch's compute is 4 times longer
    assert slow.mean_batch_s == pytest.approx(0.35 + 4 * 0.125, rel=1e-6)

    last = reports[-1]
    tasks = {e.id: e for e in last.executor_tasks}
    assert set(tasks) == {"1", "2", "3", "4"}
    mean = {i: e.mean_task_ms for i, e in tasks.items()}
    assert mean["1"] == pytest.approx(4 * mean["2"], rel=1e-6)  # the oldest is the slow one
    assert tasks["1"].tasks < tasks["2"].tasks
    assert hosts(last)["1"] == "node-00"

    assert w.replace_executors("a", ["1", "9"]) == ["1"]
    reports += reports_of(run(w, 260), "a")
    after = metrics_at(w, reports, "a", 260)
    assert after.mean_batch_s == pytest.approx(healthy.mean_batch_s, rel=1e-6)
    # the new executor, "5", avoids the node of the one it replaced while another has room
    assert hosts(reports[-1]) == {"2": "node-00", "3": "node-00", "4": "node-00", "5": "node-01"}


def test_a_replacement_takes_the_same_node_when_no_other_has_room() -> None:
    w = world(scenario(cluster={"nodes": 1}, events=[SLOW]))
    run(w, 130)
    assert w.replace_executors("a", ["1"]) == ["1"]
    reports = reports_of(run(w, 160), "a")
    assert hosts(reports[-1])["5"] == "node-00"


def test_a_skewed_stage_lasts_its_hot_task_however_many_executors() -> None:
    skew = {"skew": {"at_s": 0, "factor": 8, "job": "a", "stage": "sink"}}

    def batch_s(executors: int, events: list[Any]) -> float:
        w = world(scenario(events=events), targets={"a": executors})
        reports = reports_of(run(w, 120), "a")
        value = metrics_at(w, reports, "a", 120).mean_batch_s
        assert value is not None
        return value

    # linear shape, 1 ms a row: source 0.2, map 0.4, sink 0.4 ms; 2000 rows a batch
    assert batch_s(16, []) == pytest.approx(0.35 + 2000 * 1.0 / 16 / 1000, rel=1e-6)
    # sink's hot partition: 8/16 of its rows, 0.2 ms a row on one core whatever the count
    assert batch_s(16, [skew]) == pytest.approx(0.35 + 2 * (0.6 / 16 + 0.2), rel=1e-6)
    assert batch_s(8, [skew]) == pytest.approx(0.35 + 2 * (0.6 / 8 + 0.2), rel=1e-6)

    w = world(scenario(events=[skew]))
    stages = {s.name: s for s in reports_of(run(w, 30), "a")[-1].stages}
    assert stages["sink"].largest_partition_share == pytest.approx(0.5)
    assert stages["sink"].max_task_ms == pytest.approx(8 * stages["sink"].median_task_ms)
    assert stages["map"].largest_partition_share == pytest.approx(1 / 16)
    assert stages["sink"].tasks == 16


def test_the_true_utility_counts_the_skew_of_its_moment() -> None:
    skewed = {"skew": {"at_s": 600, "duration_s": 600, "factor": 8, "job": "a", "stage": "sink"}}
    w, even = world(scenario(events=[skewed])), world(scenario())

    def lost(seconds: float) -> float:
        moment = w.start + timedelta(seconds=seconds)
        return even.true_utility("a", 4, moment) - w.true_utility("a", 4, moment)

    # (before, during and after the skew, whatever the world's own clock)
    assert lost(599) == lost(1200) == 0.0
    assert lost(600) == lost(1199) > 0.0


def test_task_figures_are_reported_where_a_fault_makes_tasks_uneven_or_when_asked() -> None:
    assert not scenario().task_figures
    assert scenario(events=[SLOW]).task_figures
    assert scenario(task_figures=True).task_figures
    w = world(scenario())
    assert all(not r.executor_tasks and not r.stages for r in reports_of(run(w, 30), "a"))


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"slow_executor": {"at_s": 0, "duration_s": 9, "factor": 2, "job": "b"}}, "jobs"),
        ({"slow_executor": {"at_s": 0, "duration_s": 9, "factor": 0.5, "job": "a"}}, ">= 1"),
        ({"skew": {"at_s": 0, "factor": 2, "job": "a", "stage": "nope"}}, "no stage 'nope'"),
        ({"skew": {"at_s": 0, "factor": 17, "job": "a"}}, "16 partitions"),
        ({"skew": {"at_s": 0, "factor": 2}}, "missing"),
    ],
)
def test_fault_events_are_checked(event: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        scenario(events=[event])
