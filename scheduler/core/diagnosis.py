"""Why a job misses its SLO, from its tasks (Dhalion's diagnosers, DESIGN §8).

More executors help a job whose every executor and partition is loaded alike. Two causes that
more executors do not fix are told apart from that by the agent's per-executor and per-stage
task figures of the latest report windows:

- a *slow executor*: its tasks run at least ``slow_factor`` times longer, on average, than the
  lower quartile of its job's other executors' (a quartile, not the median, so that a node
  holding most of a job's executors can be found slow), in every one of the windows (a fault
  of that executor or its node; the remedy is a new executor, not more);
- *skew*: one partition of a stage holds at least ``skew_factor`` times its even share of the
  stage's rows (where partitions' rows are not reported: the longest task runs that many times
  the median), and that task outlasts the stage's work shared out over all the job's cores, so
  that more cores cannot shorten the stage, in the windows the stage finished in (a batch
  outlasting a window leaves its stages in different windows, and a window without the stage
  says nothing of it). The other stages may still gain from more cores: the diagnosis gives
  the most cores that still shorten the batch's task time by at least ``enough_gain`` (each
  stage lasting its longest task or its work over the cores, whichever is longer);
- *undecided*: the newest figures show a slow executor, a stalled one (running tasks but
  finishing none while its peers finish several) or a skewed stage that the earlier ones do not
  confirm yet (the remedy waits a window or two rather than grow on a guess);
- otherwise *under-provisioned*: the remedy is more executors (today's path).

Pure: the same windows and settings always give the same diagnosis.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scheduler.core.report import ExecutorTasks, StageTasks, TaskWindow


class Finding(StrEnum):
    SLOW_EXECUTOR = "slow_executor"
    SKEW = "skew"
    UNDECIDED = "undecided"
    UNDER_PROVISIONED = "under_provisioned"


@dataclass(frozen=True)
class DiagnosisSettings:
    slow_factor: float = 1.5
    """An executor is slow when its mean task time is at least this many times the lower
    quartile of its job's other executors' (Spark's own test for a straggling task, the
    speculation multiplier, is 1.5 times the median)."""
    skew_factor: float = 5.0
    """A stage is skewed when its largest partition holds at least this many times its even
    share of the rows (Spark's adaptive execution calls a partition skewed at 5 times the
    median)."""
    windows: int = 3
    """A finding must hold in each of this many latest report windows (for a skewed stage: the
    latest windows it finished in; at least 1)."""
    enough_gain: float = 0.05
    """Growth of a skewed job is worth it while it shortens its batches' task time by at least
    this fraction of what the largest allocation would leave."""


@dataclass(frozen=True)
class Diagnosis:
    finding: Finding
    reason: str
    executors: tuple[str, ...] = ()
    """The slow executors' ids."""
    hosts: tuple[str, ...] = ()
    """The nodes the slow executors run on, where reported."""
    stage: str | None = None
    """The skewed stage."""
    factor: float | None = None
    """How much slower the slow executors are, or how uneven the stage (the least over the
    windows)."""
    useful_cores: int | None = None
    """With skew: the most cores that still shorten the batches worth ``enough_gain``."""


def diagnose(
    windows: Sequence[TaskWindow], cores: int, top_cores: int, settings: DiagnosisSettings
) -> Diagnosis:
    """The diagnosis of a job running on ``cores`` cores, which may grow to ``top_cores``, from
    its latest task ``windows`` (oldest first)."""
    recent = list(windows[-settings.windows :])
    skew = _skewed_stage(windows, cores, settings.skew_factor, settings.windows)
    slow = (
        _slow_executors(recent, settings.slow_factor) if len(recent) == settings.windows else None
    )
    # Rows falling unevenly into partitions is the data's doing, whatever the executors;
    # and the executor that ran the hot task looks slow.
    if skew is not None and (slow is None or _by_rows(skew, windows)):
        useful = useful_cores(latest_stages(windows), cores, top_cores, settings.enough_gain)
        return dataclasses.replace(skew, useful_cores=useful)
    if slow is not None:
        return slow
    watching = _arising(windows, cores, settings)
    if watching is not None:
        return Diagnosis(Finding.UNDECIDED, f"watching {watching} (seen in the latest windows)")
    if len(recent) < settings.windows:
        return Diagnosis(
            Finding.UNDER_PROVISIONED,
            f"too few windows with task figures ({len(recent)} of {settings.windows})",
        )
    return Diagnosis(Finding.UNDER_PROVISIONED, "tasks are even across executors and partitions")


def _arising(windows: Sequence[TaskWindow], cores: int, settings: DiagnosisSettings) -> str | None:
    """A slow executor or skewed stage that the latest figures show and every figure since it
    first appeared has shown (not one that comes and goes), described; ``None`` otherwise.
    Executors are read in the latest ``settings.windows`` windows, stages in the ones they
    finished in."""
    recent = windows[-settings.windows :]
    if not recent:
        return None
    skew = _arising_skew(windows, cores, settings.skew_factor, settings.windows)
    slow = _arising_slow(recent, settings.slow_factor)
    order = (slow, skew)
    if skew is not None and _by_rows(skew, windows):
        order = (skew, slow)
    for found in order:
        if found is not None:
            return found.reason.split(":")[0]
    stalled = _stalled(recent[-1].executors)
    if stalled:
        return f"executor {', '.join(stalled)}, running tasks but finishing none"
    return None


def _arising_slow(windows: Sequence[TaskWindow], factor: float) -> Diagnosis | None:
    latest = _slow_executors(windows[-1:], factor)
    if latest is None:
        return None
    seen = [_slow_executors([w], factor) is not None for w in windows]
    return latest if all(seen[seen.index(True) :]) else None


def _arising_skew(
    windows: Sequence[TaskWindow], cores: int, factor: float, patience: int
) -> Diagnosis | None:
    """The most uneven stage seen skewed whose runs since the first skewed one all were, or were
    still uneven by their rows, fewer than ``patience`` of those last in a row: a short batch's
    hot task may not outlast the rest of its stage, but rows falling unevenly into partitions
    is the data's doing, and the next longer batch shows the skew again. A run whose rows are
    even (or, without rows, whose tasks are) clears it at once; ``patience`` short runs in a
    row clear it too (the batches have stayed short, and more executors would shorten them)."""
    arising: dict[str, int] = {}
    for name, runs in _stage_runs(windows).items():
        seen = [_skews(s, cores, factor) for s in runs]
        if True not in seen:
            continue
        first = seen.index(True)
        since = zip(seen[first:], runs[first:], strict=True)
        short = len(seen) - 1 - max(i for i, k in enumerate(seen) if k)
        if short < patience and all(k or _uneven_rows(s, factor) for k, s in since):
            arising[name] = len(seen) - first
    found = [
        d
        for name, k in arising.items()
        if (d := _skewed_stage(windows, cores, factor, k, only=name, loose=True)) is not None
    ]
    return max(found, key=lambda d: (d.factor or 0.0, d.stage or ""), default=None)


def _uneven_rows(stage: StageTasks, factor: float) -> bool:
    """The stage's rows, where reported, fall unevenly: its largest partition holds at least
    ``factor`` times its even share, whether or not its longest task bounds the stage."""
    return stage.largest_partition_share is not None and _unevenness(stage) >= factor


STALL_PEER_TASKS = 2
"""An executor that finished no task while running some is stalled when a peer finished at
least this many in the same window."""


def _stalled(executors: Sequence[ExecutorTasks]) -> list[str]:
    """Executors running tasks that finished none in a window where a peer finished several."""
    if max((e.tasks for e in executors), default=0) < STALL_PEER_TASKS:
        return []
    return sorted(e.id for e in executors if e.tasks == 0 and (e.running or 0) > 0)


def _slow_executors(windows: Sequence[TaskWindow], factor: float) -> Diagnosis | None:
    found: dict[str, float] | None = None
    for window in windows:
        ratios = _slowness(window.executors)
        slow = {e: r for e, r in ratios.items() if r >= factor}
        if found is None:
            found = slow
        else:
            found = {e: min(found[e], r) for e, r in slow.items() if e in found}
        if not found:
            return None
    if not found:
        return None
    ids = tuple(sorted(found, key=lambda e: (-found[e], e)))
    hosts = {e.id: e.host for e in windows[-1].executors if e.host}
    on = tuple(dict.fromkeys(hosts[e] for e in ids if e in hosts))
    least = min(found.values())
    where = f" on {', '.join(on)}" if on else ""
    return Diagnosis(
        Finding.SLOW_EXECUTOR,
        f"slow executor {', '.join(ids)}{where}: its tasks run {least:.1f}x the others' "
        f"over {len(windows)} windows",
        executors=ids,
        hosts=on,
        factor=least,
    )


def _slowness(executors: Sequence[ExecutorTasks]) -> dict[str, float]:
    """Each executor's mean task time over the lower quartile of the others' (with two or more
    executors that ran tasks)."""
    means = {e.id: m for e in executors if (m := e.mean_task_ms) is not None and m > 0}
    if len(means) < 2:
        return {}
    ordered = sorted(means.values())
    out: dict[str, float] = {}
    for executor_id, mean in means.items():
        others = list(ordered)
        others.remove(mean)
        out[executor_id] = mean / others[(len(others) - 1) // 4]
    return out


def _stage_runs(windows: Sequence[TaskWindow]) -> dict[str, list[StageTasks]]:
    """Each stage's figures in the windows it finished in, oldest first. A batch outlasting a
    window spreads its stages over two, so a window without a stage says nothing of it."""
    runs: dict[str, list[StageTasks]] = {}
    for window in windows:
        for s in window.stages:
            runs.setdefault(s.name, []).append(s)
    return runs


def latest_stages(windows: Sequence[TaskWindow]) -> tuple[StageTasks, ...]:
    """Each stage's figures in the latest window it finished in: the stages of the latest
    batches."""
    return tuple(runs[-1] for runs in _stage_runs(windows).values())


def _skews(stage: StageTasks, cores: int, factor: float) -> bool:
    return _unevenness(stage) >= factor and _bounds_stage(stage, cores)


def _skewed_stage(
    windows: Sequence[TaskWindow],
    cores: int,
    factor: float,
    needed: int,
    only: str | None = None,
    loose: bool = False,
) -> Diagnosis | None:
    """The most uneven stage skewed in each of the latest ``needed`` windows it finished in
    (with ``loose``, skewed or uneven by its rows)."""
    found: dict[str, tuple[float, StageTasks]] = {}
    for name, runs in _stage_runs(windows).items():
        last = runs[-needed:]
        if only not in (None, name) or len(last) < needed:
            continue
        if all(_skews(s, cores, factor) or (loose and _uneven_rows(s, factor)) for s in last):
            found[name] = (min(_unevenness(s) for s in last), last[-1])
    if not found:
        return None
    stage = max(found, key=lambda n: (found[n][0], n))
    least, latest = found[stage]
    return Diagnosis(
        Finding.SKEW,
        f"skew in stage {stage}: its largest partition holds {least:.1f}x its even "
        f"share; its longest task ({latest.max_task_ms:.0f} ms) outlasts the stage's work "
        f"over {cores} cores, so more executors will not shorten it",
        stage=stage,
        factor=least,
    )


def _by_rows(skew: Diagnosis, windows: Sequence[TaskWindow]) -> bool:
    """The skewed stage's unevenness is measured in rows (the largest partition's share), not
    inferred from task times, which a slow executor would stretch too."""
    return any(
        s.name == skew.stage and s.largest_partition_share is not None
        for s in latest_stages(windows)
    )


def _unevenness(stage: StageTasks) -> float:
    """The largest partition's rows over the even share, else the longest task over the
    median."""
    if stage.largest_partition_share is not None and stage.tasks > 0:
        return stage.largest_partition_share * stage.tasks
    if stage.median_task_ms > 0:
        return stage.max_task_ms / stage.median_task_ms
    return 0.0


def _bounds_stage(stage: StageTasks, cores: int) -> bool:
    """The longest task outlasts the stage's work (its other tasks taken at the median) spread
    evenly over ``cores``."""
    if cores <= 0:
        return True
    work = max(0.0, stage.tasks - 1.0) * stage.median_task_ms + stage.max_task_ms
    return stage.max_task_ms >= work / cores


def task_time_ms(stages: Sequence[StageTasks], cores: int) -> float:
    """A batch's task time on ``cores`` cores: each stage lasts its longest task or its work
    spread over the cores it can use, whichever is longer."""
    total = 0.0
    for s in stages:
        work = max(0.0, s.tasks - 1.0) * s.median_task_ms + s.max_task_ms
        usable = max(1.0, min(float(cores), s.tasks))
        total += max(s.max_task_ms, work / usable)
    return total


def useful_cores(
    stages: Sequence[StageTasks], cores: int, top_cores: int, enough_gain: float
) -> int:
    """The fewest cores (at least ``cores``) beyond which more, up to ``top_cores``, would
    shorten the batch's task time by less than ``enough_gain`` of the least it can reach;
    ``cores`` itself when growing that far would shorten it by less than ``enough_gain`` of
    what it is now (a step too small to judge against the batches' noise)."""
    least = task_time_ms(stages, max(cores, top_cores))
    if least <= 0 or not math.isfinite(least):
        return cores
    low, high = cores, max(cores, top_cores)
    while low < high:  # (task time falls as cores grow: bisect)
        mid = (low + high) // 2
        if task_time_ms(stages, mid) <= least * (1.0 + enough_gain):
            high = mid
        else:
            low = mid + 1
    now = task_time_ms(stages, cores)
    return low if now - task_time_ms(stages, low) >= enough_gain * now else cores


@dataclass(frozen=True)
class ExecutorLook:
    """One executor in a job's latest task window, for people to read."""

    id: str
    host: str | None
    tasks: float
    mean_task_ms: float | None
    slowness: float | None
    """Its mean task time over the lower quartile of the others' (``None``: alone or idle)."""


@dataclass(frozen=True)
class StageLook:
    """One stage in a job's latest task window, for people to read."""

    name: str
    tasks: float
    median_task_ms: float
    max_task_ms: float
    largest_partition_share: float | None
    unevenness: float
    """The largest partition's rows over the even share (else the longest task over the
    median)."""
    bounds_stage: bool
    """Its longest task outlasts its work spread over the job's cores."""


def latest_look(
    windows: Sequence[TaskWindow], cores: int
) -> tuple[tuple[ExecutorLook, ...], tuple[StageLook, ...]]:
    """The executors (slowest first) of the latest task window and the stages (most uneven
    first) of the latest batches."""
    window = windows[-1]
    slowness = _slowness(window.executors)
    executors = tuple(
        sorted(
            (
                ExecutorLook(e.id, e.host, e.tasks, e.mean_task_ms, slowness.get(e.id))
                for e in window.executors
            ),
            key=lambda x: (-(x.slowness or 0.0), x.id),
        )
    )
    stages = tuple(
        sorted(
            (
                StageLook(
                    s.name,
                    s.tasks,
                    s.median_task_ms,
                    s.max_task_ms,
                    s.largest_partition_share,
                    _unevenness(s),
                    _bounds_stage(s, cores),
                )
                for s in latest_stages(windows)
            ),
            key=lambda x: (-x.unevenness, x.name),
        )
    )
    return executors, stages
