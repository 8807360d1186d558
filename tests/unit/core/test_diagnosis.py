"""The diagnosis of a job missing its SLO: slow executor, skew, or under-provisioned."""

from __future__ import annotations

import pytest

from scheduler.core.diagnosis import (
    DiagnosisSettings,
    Finding,
    diagnose,
    latest_look,
    task_time_ms,
    useful_cores,
)
from scheduler.core.report import ExecutorTasks, StageTasks, TaskWindow

SETTINGS = DiagnosisSettings()


def executors(*means: float, tasks: float = 20.0) -> tuple[ExecutorTasks, ...]:
    """One executor per mean task time (ms), ids "1", "2", ..., on node-<id>."""
    return tuple(
        ExecutorTasks(str(i), tasks, tasks * mean, host=f"node-{i}")
        for i, mean in enumerate(means, start=1)
    )


def stage(
    name: str, tasks: float, median: float, longest: float, share: float | None = None
) -> StageTasks:
    return StageTasks(name, tasks, median, longest, largest_partition_share=share)


EVEN = (stage("read", 8, 100.0, 110.0, 1 / 8), stage("aggregate", 8, 100.0, 120.0, 1 / 8))


def windows(n: int, execs: tuple[ExecutorTasks, ...], stages: tuple[StageTasks, ...] = EVEN):
    return [TaskWindow(execs, stages)] * n


def test_even_tasks_mean_the_job_is_under_provisioned() -> None:
    d = diagnose(windows(3, executors(100, 104, 98, 101)), 4, 8, SETTINGS)
    assert d.finding is Finding.UNDER_PROVISIONED
    assert d.executors == () and d.stage is None


def test_an_executor_slow_in_every_window_is_named_with_its_node() -> None:
    d = diagnose(windows(3, executors(100, 400, 98, 101)), 4, 8, SETTINGS)
    assert d.finding is Finding.SLOW_EXECUTOR
    assert d.executors == ("2",)
    assert d.hosts == ("node-2",)
    assert d.factor == pytest.approx(400 / 98)  # (over the others' lower quartile)
    assert "slow executor 2 on node-2" in d.reason


def test_slowness_must_hold_in_every_recent_window() -> None:
    slow = TaskWindow(executors(100, 400, 98, 101), EVEN)
    even = TaskWindow(executors(100, 104, 98, 101), EVEN)
    assert diagnose([slow, even, slow], 4, 8, SETTINGS).finding is Finding.UNDER_PROVISIONED
    # (older windows than the latest three do not count)
    assert diagnose([even, slow, slow, slow], 4, 8, SETTINGS).finding is Finding.SLOW_EXECUTOR


def test_a_lone_executor_has_no_peers_to_be_slower_than() -> None:
    d = diagnose(windows(3, executors(900)), 1, 8, SETTINGS)
    assert d.finding is Finding.UNDER_PROVISIONED


def test_too_few_windows_give_no_finding() -> None:
    d = diagnose(windows(2, executors(100, 104, 98)), 3, 8, SETTINGS)
    assert d.finding is Finding.UNDER_PROVISIONED
    assert "too few windows" in d.reason


def test_a_fault_the_latest_windows_begin_to_show_is_watched_not_grown_on() -> None:
    slow = TaskWindow(executors(100, 400, 98, 101), EVEN)
    even = TaskWindow(executors(100, 104, 98, 101), EVEN)
    for seen in ([slow], [slow, slow], [even, even, slow], [even, slow, slow]):
        d = diagnose(seen, 4, 8, SETTINGS)
        assert d.finding is Finding.UNDECIDED, seen
        assert d.reason == "watching slow executor 2 on node-2 (seen in the latest windows)"
    # one that comes and goes is no fault to wait for
    assert diagnose([slow, even, slow], 4, 8, SETTINGS).finding is Finding.UNDER_PROVISIONED


def test_an_executor_running_tasks_but_finishing_none_while_its_peers_do_is_watched() -> None:
    stalled = (
        ExecutorTasks("1", 20, 2000.0),
        ExecutorTasks("2", 0, 0.0, running=1),
        ExecutorTasks("3", 18, 1900.0),
    )
    d = diagnose([TaskWindow(stalled, EVEN)], 3, 8, SETTINGS)
    assert d.finding is Finding.UNDECIDED
    assert (
        d.reason
        == "watching executor 2, running tasks but finishing none (seen in the latest windows)"
    )
    # a window in which nobody finished much says nothing of anyone
    quiet = (ExecutorTasks("1", 1, 100.0), ExecutorTasks("2", 0, 0.0, running=1))
    assert diagnose([TaskWindow(quiet, EVEN)], 2, 8, SETTINGS).finding is Finding.UNDER_PROVISIONED


def test_a_node_holding_most_of_a_jobs_executors_is_still_found_slow() -> None:
    d = diagnose(windows(3, executors(400, 410, 395, 100, 102)), 5, 8, SETTINGS)
    assert d.finding is Finding.SLOW_EXECUTOR
    assert d.executors == ("2", "1", "3")


def test_a_hot_partition_that_bounds_its_stage_is_skew() -> None:
    hot = (stage("read", 8, 100.0, 110.0, 1 / 8), stage("aggregate", 8, 100.0, 700.0, 6 / 8))
    d = diagnose(windows(3, executors(100, 104, 98, 101), hot), 4, 8, SETTINGS)
    assert d.finding is Finding.SKEW
    assert d.stage == "aggregate"
    assert d.factor == pytest.approx(6.0)
    assert "more executors will not shorten it" in d.reason


def test_without_partition_rows_the_longest_task_against_the_median_tells_skew() -> None:
    hot = (stage("aggregate", 8, 100.0, 700.0),)
    d = diagnose(windows(3, executors(100, 104), hot), 2, 8, SETTINGS)
    assert d.finding is Finding.SKEW
    assert d.factor == pytest.approx(7.0)


def test_an_uneven_stage_whose_work_outlasts_its_longest_task_is_not_skew() -> None:
    # 400 tasks of 100 ms on 4 cores: 10 s of work; a 600 ms task hides inside it.
    wide = (stage("aggregate", 400, 100.0, 600.0, 6 / 400),)
    d = diagnose(windows(3, executors(100, 104, 98, 101), wide), 4, 8, SETTINGS)
    assert d.finding is Finding.UNDER_PROVISIONED


def test_a_slow_executor_is_told_before_skew_inferred_from_task_times() -> None:
    hot = (stage("aggregate", 8, 100.0, 700.0),)
    d = diagnose(windows(3, executors(100, 400, 98, 101), hot), 4, 8, SETTINGS)
    assert d.finding is Finding.SLOW_EXECUTOR


def test_skew_measured_in_rows_is_told_before_the_executor_its_hot_task_slows() -> None:
    # The executor that ran the 700 ms hot task has the highest mean task time: not its fault.
    hot = (stage("aggregate", 8, 100.0, 700.0, 6 / 8),)
    d = diagnose(windows(3, executors(100, 400, 98, 101), hot), 4, 8, SETTINGS)
    assert d.finding is Finding.SKEW
    arising = [TaskWindow(executors(100, 101, 99), EVEN)] * 2 + [
        TaskWindow(executors(100, 400, 98), hot)
    ]
    assert diagnose(arising, 3, 8, SETTINGS).reason.startswith("watching skew in stage")


def test_task_time_counts_each_stage_at_its_longest_task_or_its_spread_work() -> None:
    stages = (stage("a", 8, 100.0, 100.0), stage("b", 8, 100.0, 500.0))
    # a: 800 ms of work; b: 1200 ms of work but never under its 500 ms task
    assert task_time_ms(stages, 1) == pytest.approx(800 + 1200)
    assert task_time_ms(stages, 4) == pytest.approx(200 + 500)
    assert task_time_ms(stages, 8) == pytest.approx(100 + 500)
    assert task_time_ms(stages, 64) == pytest.approx(100 + 500)  # (8 tasks use 8 cores)


def test_useful_cores_stop_where_more_shorten_the_batch_by_too_little() -> None:
    stages = (stage("a", 8, 100.0, 100.0), stage("b", 8, 100.0, 500.0))
    # least: 600 ms at 8 cores or more; within 5 % (630 ms) first at 7 cores (6: 633, 7: 614)
    assert useful_cores(stages, 2, 16, 0.05) == 7
    assert useful_cores(stages, 2, 16, 0.20) == 4  # within 720 ms (3: 767, 4: 700)
    assert useful_cores(stages, 10, 16, 0.05) == 10  # never below what it runs on
    # From 6 cores (633 ms) the 7th would gain 19 ms, under 5 % of now: not worth a move.
    assert useful_cores(stages, 6, 16, 0.05) == 6


def test_skew_gives_the_useful_cores() -> None:
    hot = (stage("read", 8, 100.0, 110.0, 1 / 8), stage("aggregate", 8, 100.0, 700.0, 6 / 8))
    d = diagnose(windows(3, executors(100, 104), hot), 2, 16, SETTINGS)
    assert d.finding is Finding.SKEW
    assert d.useful_cores == useful_cores(hot, 2, 16, SETTINGS.enough_gain)
    assert d.useful_cores is not None and 2 < d.useful_cores <= 8


def test_a_window_without_the_skewed_stage_neither_confirms_nor_clears_it() -> None:
    # Batches outlasting a window: the read stage finishes in one window, the hot one in the next.
    read, hot = stage("read", 8, 100.0, 110.0, 1 / 8), stage("aggregate", 8, 100.0, 700.0, 6 / 8)
    execs = executors(100, 104)
    halves = [TaskWindow(execs, (read,)), TaskWindow(execs, (hot,))] * 3
    for seen in (halves, [*halves, TaskWindow(execs, (read,))]):
        d = diagnose(seen, 2, 16, SETTINGS)
        assert d.finding is Finding.SKEW, seen
        assert d.stage == "aggregate"
        # (the useful cores count both stages, each from the latest window it finished in)
        assert d.useful_cores == useful_cores((read, hot), 2, 16, SETTINGS.enough_gain)
    # Seen skewed twice, the hot stage is watched whatever the windows between show.
    d = diagnose(halves[:-1], 2, 16, SETTINGS)
    assert d.finding is Finding.UNDECIDED
    assert d.reason.startswith("watching skew in stage aggregate")
    # A run of the stage that is even clears it, however many windows lack it.
    even = stage("aggregate", 8, 100.0, 120.0, 1 / 8)
    cleared = [*halves, TaskWindow(execs, (even,)), TaskWindow(execs, (read,))]
    assert diagnose(cleared, 2, 16, SETTINGS).finding is Finding.UNDER_PROVISIONED


def test_a_short_run_still_uneven_by_its_rows_keeps_the_skew_watched() -> None:
    # Confirmed on three runs; then a short batch: its hot partition still holds 6/8 of the
    # rows, but its longest task (300 ms) no longer outlasts the rest over 2 cores (7 × 100).
    hot = stage("aggregate", 8, 100.0, 700.0, 6 / 8)
    short = stage("aggregate", 8, 100.0, 300.0, 6 / 8)
    execs = executors(100, 104)
    skewed = [TaskWindow(execs, (hot,))] * 3
    for shorts in (1, SETTINGS.windows - 1):
        d = diagnose([*skewed, *[TaskWindow(execs, (short,))] * shorts], 2, 16, SETTINGS)
        assert d.finding is Finding.UNDECIDED
        assert d.reason.startswith("watching skew in stage aggregate")
    # As many short runs in a row as a finding needs: the batches stay short, and more
    # executors would shorten them.
    d = diagnose([*skewed, *[TaskWindow(execs, (short,))] * SETTINGS.windows], 2, 16, SETTINGS)
    assert d.finding is Finding.UNDER_PROVISIONED
    # Its rows even again, the skew is cleared.
    even = stage("aggregate", 8, 100.0, 300.0, 1 / 8)
    d = diagnose([*skewed, TaskWindow(execs, (even,))], 2, 16, SETTINGS)
    assert d.finding is Finding.UNDER_PROVISIONED
    # Without rows, only the task times tell: a short run whose longest task does not stand
    # out (3x the median) clears it.
    timed, quick = stage("aggregate", 8, 100.0, 700.0), stage("aggregate", 8, 100.0, 300.0)
    d = diagnose([*[TaskWindow(execs, (timed,))] * 3, TaskWindow(execs, (quick,))], 2, 16, SETTINGS)
    assert d.finding is Finding.UNDER_PROVISIONED
    # A stage never seen bounding its batches is no skew, however uneven its rows.
    d = diagnose([TaskWindow(execs, (short,))] * 4, 2, 16, SETTINGS)
    assert d.finding is Finding.UNDER_PROVISIONED


def test_the_latest_look_shows_each_stage_from_the_latest_window_it_finished_in() -> None:
    read, hot = stage("read", 8, 100.0, 110.0, 1 / 8), stage("aggregate", 8, 100.0, 700.0, 6 / 8)
    slow, fast = executors(300, 100), executors(100, 100)
    execs, stages = latest_look([TaskWindow(slow, (read, hot)), TaskWindow(fast, (read,))], 2)
    assert [s.name for s in stages] == ["aggregate", "read"]
    assert stages[0].unevenness == pytest.approx(6.0) and stages[0].bounds_stage
    assert all(e.slowness == pytest.approx(1.0) for e in execs)  # (executors: the latest window)
