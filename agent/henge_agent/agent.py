"""The agent: one report per sub-window, the answer's target applied live (DESIGN §5.3).

Runs in a daemon thread of the tenant's driver. Nothing it does raises into the job: a failure
to read a metric, to reach the scheduler or to resize is logged and the job goes on with the
executors it has.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from henge_agent.estimator import latency_ms
from henge_agent.progress import Drained, ProgressBook
from henge_agent.settings import DEFAULT_MAX_BACKOFF_S, DEFAULT_SUB_WINDOW_S
from henge_agent.spark_control import ExecutorState, SparkControl, StageRun
from henge_agent.transport import MAX_BATCH, Answer, BatchAnswer, ReportClient, ReportError

log = logging.getLogger("henge.agent")

MAX_BATCHES = 10_000
KEEP_PENDING_S = 300.0
"""Windows the scheduler has not taken are kept this long (by their sub-windows), at least
``MIN_PENDING`` of them, and sent again once it answers: an outage of the registry as long as
this loses nothing. Older ones are dropped and counted (the sliding window the scheduler judges
by is far shorter; only the job's history misses them)."""
MIN_PENDING = 6
MAX_STAGE_RUNS = 20
"""Finished stages read per report at most (the newest): about a millisecond of the driver's
CPU each."""


def iso(epoch_s: float) -> str:
    moment = datetime.fromtimestamp(epoch_s, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class AgentStats:
    """Counters and the agent's own CPU time in the driver (Python side, thread CPU time)."""

    reports_sent: int = 0
    reports_failed: int = 0
    reports_dropped: int = 0
    targets_applied: int = 0
    targets_ignored: int = 0
    progress_events: int = 0
    report_cpu_s: float = 0.0
    """CPU time of the agent thread: reading Spark's status, building, posting, resizing."""
    listener_cpu_s: float = 0.0
    """CPU time spent in the listener callbacks (after PySpark has built the event)."""
    last_target: int | None = None
    last_round: int | None = None
    executors_lost: int = 0
    """Executors that went away without the agent removing them (a crash, a lost node)."""
    executors_replaced: int = 0
    """Executors the agent stopped because the scheduler found them slow."""
    resizes: list[dict[str, Any]] = field(default_factory=list)

    def cpu_ms_per_report(self) -> float | None:
        if not self.reports_sent:
            return None
        return (self.report_cpu_s + self.listener_cpu_s) * 1000.0 / self.reports_sent


class Agent:
    def __init__(
        self,
        control: SparkControl,
        client: ReportClient,
        book: ProgressBook,
        *,
        sub_window_s: float = DEFAULT_SUB_WINDOW_S,
        min_executors: int | None = None,
        max_executors: int | None = None,
        initial_executors: int | None = None,
        max_backoff_s: float = DEFAULT_MAX_BACKOFF_S,
        resize: bool = True,
        task_figures: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if sub_window_s <= 0:
            raise ValueError("sub_window_s must be > 0")
        if (
            min_executors is not None
            and max_executors is not None
            and min_executors > max_executors
        ):
            raise ValueError(f"min_executors ({min_executors}) > max_executors ({max_executors})")
        self.control = control
        self.client = client
        self.book = book
        self.sub_window_s = float(sub_window_s)
        self.max_pending = max(MIN_PENDING, math.ceil(KEEP_PENDING_S / self.sub_window_s))
        self.min_executors = min_executors if min_executors is not None else 0
        self.max_executors = max_executors
        self.initial_executors = initial_executors
        self.max_backoff_s = max_backoff_s
        self.resize = resize
        """False: report only (a job run by the spark-operator is resized by its realizer)."""
        self.task_figures = task_figures
        """Report per-executor and per-stage task figures (for the scheduler's diagnosis)."""
        self.clock = clock
        self.stats = AgentStats()
        self.applied: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending: deque[dict[str, Any]] = deque()
        self._batches = True
        """Whether the scheduler takes several windows in one request (an older one does not)."""
        self._failures = 0
        self._next_attempt = 0.0
        self._task_time: dict[str, float] = {}
        self._task_time_before: dict[str, float] = {}
        self._tasks_done: dict[str, int] = {}
        self._last_stage = -1
        """The newest finished stage reported (stage ids only grow)."""
        self._window_start = clock()
        self._ignored: int | None = None
        self._killed: set[str] = set()
        self._held: set[str] = set()
        """The executors the last reconcile saw running that the agent did not remove."""
        self._replaced: set[str] = set()
        """Executors already stopped for a replacement (Spark never reuses an id)."""
        self._short_of_replacements = False
        """Replaced executors may still be starting: ask for the total until it is there."""
        self._cores = self._cores_per_executor()
        self._task_cpus = _int(control.conf("spark.task.cpus", "1"), 1)
        self.on_stop: list[Callable[[], None]] = []

    # ---- life cycle ---------------------------------------------------------------------------

    def start(self) -> Agent:
        self._baseline()
        if self.initial_executors is not None:
            self._guard("initial size", lambda: self.apply_target(self.initial_executors))
        self._thread = threading.Thread(target=self._run, name="henge-agent", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop reporting (the executors stay as they are)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)
        for hook in self.on_stop:
            self._guard("stop", hook)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        next_close = self._window_start + self.sub_window_s
        while not self._stop.is_set():
            now = self.clock()
            wake = min(next_close, self._next_attempt) if self._pending else next_close
            if self._stop.wait(max(0.0, wake - now)):
                break
            now = self.clock()
            if now >= next_close:
                self._guard("report", partial(self.tick, now))
                next_close += self.sub_window_s
                if next_close <= now:  # fell behind (a paused process): skip ahead
                    next_close = now + self.sub_window_s
            elif self._pending and now >= self._next_attempt:
                self._guard("retry", partial(self.flush, now))

    def _guard(self, what: str, action: Callable[[], Any]) -> None:
        try:
            action()
        except Exception:
            log.exception("henge agent: %s failed; the job goes on unchanged", what)

    # ---- one sub-window -----------------------------------------------------------------------

    def tick(self, now: float | None = None) -> None:
        """Close the current sub-window, queue its report, and send what is queued."""
        started = time.thread_time()
        now = self.clock() if now is None else now
        try:
            report = self.build_report(self._window_start, now)
            self._window_start = now
            self._pending.append(report)
            while len(self._pending) > self.max_pending:
                self._pending.popleft()
                self.stats.reports_dropped += 1
            if now >= self._next_attempt:
                self.flush(now, count_cpu=False)
        finally:
            self.stats.report_cpu_s += time.thread_time() - started

    def flush(self, now: float | None = None, *, count_cpu: bool = True) -> None:
        """Send the queued reports, oldest first; apply the newest answer's target."""
        started = time.thread_time()
        now = self.clock() if now is None else now
        answer: Answer | BatchAnswer | None = None
        try:
            while self._pending:
                try:
                    answer = self._deliver() or answer
                except ReportError as exc:
                    self._failed(exc, now)
                    return
            if self._failures:
                log.info(
                    "henge agent: scheduler reachable again after %d failure(s)", self._failures
                )
            self._failures = 0
            self._next_attempt = 0.0
        finally:
            if answer is not None:
                self.stats.last_target = answer.target_executors
                self.stats.last_round = answer.round
                self.apply_target(answer.target_executors)
                if answer.replace_executors:
                    self._guard("replace", partial(self.replace, answer.replace_executors))
            if count_cpu:
                self.stats.report_cpu_s += time.thread_time() - started

    def _deliver(self) -> Answer | BatchAnswer | None:
        """Send the oldest queued windows, several in one batch when there are several, and
        drop those the scheduler refuses; raises :class:`ReportError` when worth retrying."""
        route_missing = False
        if len(self._pending) > 1 and self._batches:
            try:
                batch = self.client.post_batch(list(self._pending))
            except ReportError as exc:
                # An older scheduler without the batch route (404, 405) or a batch refused as a
                # whole (413, 422): one window at a time tells which are at fault.
                if exc.retry and exc.status not in (404, 405):
                    raise
                route_missing = exc.status in (404, 405)
            else:
                delivered = min(len(self._pending), MAX_BATCH)
                for _ in range(delivered):
                    self._pending.popleft()
                for why in batch.refused:
                    log.warning("henge agent: report refused (%s); dropping it", why)
                self.stats.reports_sent += delivered - len(batch.refused)
                self.stats.reports_dropped += len(batch.refused)
                return batch
        try:
            answer = self.client.post(self._pending[0])
        except ReportError as exc:
            if exc.retry:
                raise
            log.warning("henge agent: report refused (%s); dropping it", exc)
            self.stats.reports_dropped += 1
            self._pending.popleft()
            return None
        if route_missing:  # the job is known, so it is the route that is: stop asking for it
            log.info("henge agent: the scheduler has no batch route; sending one window at a time")
            self._batches = False
        self._pending.popleft()
        self.stats.reports_sent += 1
        return answer

    def _failed(self, exc: ReportError, now: float) -> None:
        self._failures += 1
        self.stats.reports_failed += 1
        delay = min(self.max_backoff_s, self.sub_window_s * 2 ** (self._failures - 1))
        delay *= random.uniform(0.8, 1.2)
        self._next_attempt = now + delay
        level = (
            logging.WARNING if self._failures == 1 or self._failures % 10 == 0 else logging.DEBUG
        )
        log.log(
            level,
            "henge agent: report not delivered (%s); keeping the current executors, "
            "retry %d in %.0f s",
            exc,
            self._failures,
            delay,
        )

    def build_report(self, start: float, end: float) -> dict[str, Any]:
        drained = self.book.drain()
        self.stats.progress_events += drained.events
        executors = self.control.live_executor_ids()
        states = self._executor_states()
        busy_ms = self._busy_core_ms(states)
        report: dict[str, Any] = {
            "window_start": iso(start),
            "window_end": iso(max(end, start + 0.001)),
            "executors": len(executors),
            "cores_per_executor": self._cores,
            "busy_core_ms": round(busy_ms, 3),
            "sources": self._sources(drained, end - start),
            "batches": [
                {
                    "start": iso(b.start),
                    "end": iso(max(b.end, b.start)),
                    "rows": b.rows,
                    **({"backlog_at_start": b.backlog_at_start} if b.backlog_at_start else {}),
                }
                for b in drained.batches[-MAX_BATCHES:]
            ],
        }
        latency = latency_ms(drained.batches)
        if latency is not None:
            report["latency_ms"] = latency
        try:
            widest = self.control.widest_stage()
        except Exception as exc:
            log.debug("henge agent: stage info unavailable: %s", exc)
            widest = None
        if widest:
            report["max_parallelism"] = widest
        if drained.state_rows is not None:
            report["state"] = {
                "rows": drained.state_rows,
                "memory_bytes": drained.state_memory_bytes,
            }
        if self.task_figures:
            report.update(self._task_figures(states))
        return report

    def _task_figures(self, states: list[ExecutorState] | None) -> dict[str, Any]:
        """Per executor, the tasks it finished since the last report and their run time; per
        stage (by name and width), its runs finished since, their tasks' median and longest run
        time and the largest partition's share of the records, averaged over the runs."""
        out: dict[str, Any] = {}
        if states is not None:
            done: dict[str, int] = {}
            rows = []
            for state in states:
                done[state.id] = state.completed_tasks
                tasks = state.completed_tasks - self._tasks_done.get(state.id, 0)
                if state.active and (tasks > 0 or state.active_tasks > 0):
                    # (one running tasks that finished none: a straggler, or a long task)
                    ms = state.task_time_ms - self._task_time_before.get(state.id, 0.0)
                    entry = {"id": state.id, "tasks": tasks, "task_ms": round(max(0.0, ms), 3)}
                    rows.append(
                        {
                            **entry,
                            "running": state.active_tasks,
                            **({"host": state.host} if state.host else {}),
                        }
                    )
            self._tasks_done = done
            if rows:
                out["executor_tasks"] = rows
        try:
            runs = self.control.finished_stages(self._last_stage, MAX_STAGE_RUNS)
        except Exception as exc:
            log.debug("henge agent: finished stages unavailable: %s", exc)
            runs = []
        if runs:
            self._last_stage = max(r.stage_id for r in runs)
            out["stages"] = stage_figures(runs)
        return out

    def _sources(self, drained: Drained, seconds: float) -> list[dict[str, Any]]:
        out = []
        for source in drained.sources.values():
            entry: dict[str, Any] = {"name": source.name, "processed_rows": source.processed_rows}
            if source.rows_per_second is not None:
                entry["arrived_rows"] = round(source.rows_per_second * max(0.0, seconds), 3)
            if source.backlog_rows is not None:
                entry["backlog_rows"] = source.backlog_rows
            out.append(entry)
        return out

    def _baseline(self) -> None:
        try:
            states = self.control.executors()
        except Exception as exc:
            log.warning("henge agent: executor status unavailable at start: %s", exc)
            return
        self._task_time = {e.id: e.task_time_ms for e in states}
        self._tasks_done = {e.id: e.completed_tasks for e in states}

    def _executor_states(self) -> list[ExecutorState] | None:
        try:
            return self.control.executors()
        except Exception as exc:
            log.warning("henge agent: executor status unavailable: %s", exc)
            return None

    def _busy_core_ms(self, states: list[ExecutorState] | None) -> float:
        """Core-ms the executors spent running tasks since the last report: the growth of each
        executor's cumulative task time (live and dead ones alike), times ``spark.task.cpus``."""
        self._task_time_before = self._task_time
        if states is None:
            return 0.0
        busy = 0.0
        seen: dict[str, float] = {}
        for state in states:
            seen[state.id] = state.task_time_ms
            busy += max(0.0, state.task_time_ms - self._task_time.get(state.id, 0.0))
        self._task_time = seen
        return busy * self._task_cpus

    def _cores_per_executor(self) -> int:
        configured = _int(self.control.conf("spark.executor.cores"), 0)
        if configured > 0:
            return configured
        try:
            cores = [e.cores for e in self.control.executors() if e.active and e.cores > 0]
        except Exception:
            cores = []
        return max(set(cores), key=cores.count) if cores else 1

    # ---- resizing -----------------------------------------------------------------------------

    def within_bounds(self, target: int) -> bool:
        if target < self.min_executors:
            return False
        return self.max_executors is None or target <= self.max_executors

    def apply_target(self, target: int | None) -> bool:
        """Resize to ``target`` executors; returns whether Spark was asked to change.

        A target outside ``[min_executors, max_executors]`` is ignored (one log line per value).
        Growing is ``requestTotalExecutors``; shrinking kills the surplus, idle executors first
        (then those with the fewest running tasks, newest first), and sets the new total. The
        same target again only removes a surplus Spark still has (a standalone master launches
        executors on every free core before the first target arrives).
        """
        if target is None:
            return False
        if not self.within_bounds(target):
            self.stats.targets_ignored += 1
            if self._ignored != target:
                self._ignored = target
                high = "inf" if self.max_executors is None else self.max_executors
                log.warning(
                    "henge agent: ignoring target %d: outside the job's bounds [%d, %s]; "
                    "keeping the current executors",
                    target,
                    self.min_executors,
                    high,
                )
            return False
        self._ignored = None
        changed = target != self.applied
        self.applied = target
        if not self.resize:
            return False
        acted = self._reconcile(target, request=changed)
        if changed:
            self.stats.targets_applied += 1
        return acted

    def replace(self, executor_ids: Sequence[str]) -> list[str]:
        """Stop the named executors that still run, each once, and ask Spark for the total
        again, so that a new executor starts for each (``killExecutors`` lowers Spark's target;
        the request raises it back). Returns those stopped."""
        fresh = [i for i in executor_ids if i not in self._replaced]
        if not fresh or not self.resize or self.applied is None:
            return []
        self._replaced.update(fresh)
        registered = set(self.control.live_executor_ids())
        victims = [i for i in fresh if i in registered and i not in self._killed]
        if not victims:
            return []
        self.control.kill(victims)
        self._killed |= set(victims)
        self._held -= set(victims)
        self.control.request_total(self.applied)
        self._short_of_replacements = True
        self.stats.executors_replaced += len(victims)
        log.info(
            "henge agent: replacing slow executor(s) %s; asking Spark for %d executors",
            ", ".join(victims),
            self.applied,
        )
        self._record_resize(self.applied, self.applied, victims)
        return victims

    def _reconcile(self, target: int, *, request: bool) -> bool:
        registered = self.control.live_executor_ids()
        lost = sorted(self._held - set(registered))
        if lost:
            # Spark (the standalone master, the Kubernetes allocator) starts a replacement
            # on its own; asking for the total again makes sure of it under any manager.
            self.stats.executors_lost += len(lost)
            log.warning(
                "henge agent: executor(s) %s lost without the agent removing them; "
                "asking Spark for %d executors again",
                ", ".join(lost),
                target,
            )
            request = True
        self._killed &= set(registered)  # those gone are gone
        live = [i for i in registered if i not in self._killed]
        if self._short_of_replacements:
            # (a manager that saw the stopped executors still alive when asked may not have
            # started new ones: ask again until the total is there)
            self._short_of_replacements = len(live) < target
            request = request or self._short_of_replacements
        victims: list[str] = []
        if len(live) > target:
            victims = self._victims(live, len(live) - target)
            self.control.kill(victims)
            self._killed |= set(victims)
        self._held = set(live) - set(victims)
        if not (request or victims):
            return False
        self.control.request_total(target)
        log.info(
            "henge agent: executors %d -> %d%s",
            len(live),
            target,
            f" (removing {', '.join(victims)})" if victims else "",
        )
        self._record_resize(len(live), target, victims)
        return True

    def _record_resize(self, before: int, after: int, killed: list[str]) -> None:
        self.stats.resizes.append(
            {"at": self.clock(), "from": before, "to": after, "killed": killed}
        )
        del self.stats.resizes[:-50]

    def _victims(self, live: list[str], count: int) -> list[str]:
        try:
            states = {e.id: e for e in self.control.executors() if e.id in set(live)}
        except Exception:
            states = {}

        def key(executor_id: str) -> tuple[int, float, int]:
            # Idle first, then fewest running tasks; among equals the newest (Spark numbers
            # executors in order), whose loss costs the least cached data.
            newest = -int(executor_id) if executor_id.isdigit() else 0
            state = states.get(executor_id)
            if state is None:
                return (0, math.inf, newest)
            return (state.active_tasks, -state.add_time_ms, newest)

        return sorted(live, key=key)[:count]


def stage_figures(runs: Sequence[StageRun]) -> list[dict[str, Any]]:
    """Stage runs grouped by name and width (a micro-batch's stages keep both from one batch
    to the next), each group's figures averaged over its runs, newest group first."""
    groups: dict[tuple[str, int], list[StageRun]] = {}
    for run in runs:
        groups.setdefault((run.name, run.tasks), []).append(run)
    out = []
    for (name, tasks), group in groups.items():
        shares = [r.largest_partition_share for r in group if r.largest_partition_share is not None]
        entry: dict[str, Any] = {
            "name": f"{name[:400]} ({tasks} tasks)",
            "runs": len(group),
            "tasks": tasks,
            "median_task_ms": sum(r.median_task_ms for r in group) / len(group),
            "max_task_ms": sum(r.max_task_ms for r in group) / len(group),
        }
        if shares:
            entry["largest_partition_share"] = sum(shares) / len(shares)
        out.append(entry)
    return out


def _int(value: str | None, default: int) -> int:
    try:
        return int(str(value).strip()) if value is not None else default
    except ValueError:
        return default
