"""What the agent reads from and does to the Spark application (PySpark and stdlib only).

Reads come from Spark's own status APIs: the application status store (the data behind the UI
and its REST API: executors with their cumulative task time, finished and running tasks; the
finished stages with their tasks' run time and records quantiles) through the driver's JVM,
falling back to the UI's REST API ``/api/v1/applications/{id}/allexecutors`` for executors;
the status tracker for the stages running now (their task counts give the useful
parallelism). Resizing is ``SparkContext.requestTotalExecutors`` and
``SparkContext.killExecutors`` (both developer APIs of the Scala ``SparkContext``; PySpark does
not wrap them), which work whenever dynamic allocation is off.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger("henge.agent")

DRIVER_ID = "driver"
WIDTH_SAMPLES = 30
"""Reports over which the widest stage seen is remembered."""


@dataclass(frozen=True)
class ExecutorState:
    id: str
    active: bool
    cores: int
    task_time_ms: float
    """Cumulative time its tasks ran (Spark's ``totalDuration``)."""
    active_tasks: int
    add_time_ms: float = 0.0
    completed_tasks: int = 0
    """Tasks it finished (Spark's ``completedTasks``)."""
    host: str | None = None


@dataclass(frozen=True)
class StageRun:
    """One finished stage: its tasks, their median and longest run time, and the share of its
    records its largest task read (``None`` when it read none)."""

    stage_id: int
    name: str
    tasks: int
    median_task_ms: float
    max_task_ms: float
    largest_partition_share: float | None


class SparkControl(Protocol):
    """The agent's view of one Spark application (faked in tests)."""

    def executors(self) -> list[ExecutorState]:
        """Every executor Spark knows of, live and dead, without the driver."""
        ...

    def live_executor_ids(self) -> list[str]: ...

    def request_total(self, count: int) -> bool: ...

    def kill(self, executor_ids: Sequence[str]) -> bool: ...

    def widest_stage(self) -> int | None:
        """Tasks of the widest recent stage of the application."""
        ...

    def finished_stages(self, after_id: int, limit: int) -> list[StageRun]:
        """The newest finished stages with an id above ``after_id``, at most ``limit``, newest
        first."""
        ...

    def conf(self, key: str, default: str | None = None) -> str | None: ...


class PySparkControl:
    """:class:`SparkControl` over a live ``SparkContext`` (classic PySpark, not Spark Connect)."""

    def __init__(self, sc: Any) -> None:
        self.sc = sc
        self._jsc = sc._jsc.sc()
        self._jvm = sc._jvm
        self._store_ok = True
        self._widths: deque[int] = deque(maxlen=WIDTH_SAMPLES)
        self._median_max: Any = None
        self._none: Any = None

    # ---- reads --------------------------------------------------------------------------------

    def conf(self, key: str, default: str | None = None) -> str | None:
        value = self.sc.getConf().get(key, default)
        return None if value is None else str(value)

    def executors(self) -> list[ExecutorState]:
        if self._store_ok:
            try:
                return self._from_store()
            except Exception as exc:  # py4j errors: the store is internal API
                log.warning("henge agent: status store unavailable (%s); using the REST API", exc)
                self._store_ok = False
        return self._from_rest()

    def _from_store(self) -> list[ExecutorState]:
        summaries = self._jsc.statusStore().executorList(False)
        out = []
        for i in range(summaries.size()):
            s = summaries.apply(i)
            executor_id = s.id()
            if executor_id == DRIVER_ID:
                continue
            out.append(
                ExecutorState(
                    id=executor_id,
                    active=bool(s.isActive()),
                    cores=int(s.totalCores()),
                    task_time_ms=float(s.totalDuration()),
                    active_tasks=int(s.activeTasks()),
                    add_time_ms=float(s.addTime().getTime()),
                    completed_tasks=int(s.completedTasks()),
                    host=_host(str(s.hostPort())),
                )
            )
        return out

    def _from_rest(self) -> list[ExecutorState]:
        ui = self.sc.uiWebUrl
        if not ui:
            return []
        url = f"{ui}/api/v1/applications/{self.sc.applicationId}/allexecutors"
        with urllib.request.urlopen(url, timeout=5) as response:
            rows = json.loads(response.read().decode())
        return [
            ExecutorState(
                id=str(row["id"]),
                active=bool(row.get("isActive")),
                cores=int(row.get("totalCores") or 0),
                task_time_ms=float(row.get("totalDuration") or 0),
                active_tasks=int(row.get("activeTasks") or 0),
                completed_tasks=int(row.get("completedTasks") or 0),
                host=_host(str(row.get("hostPort") or "")),
            )
            for row in rows
            if row.get("id") != DRIVER_ID
        ]

    def live_executor_ids(self) -> list[str]:
        """Executors registered with the scheduler backend now (the status store lags)."""
        try:
            ids = self._jsc.getExecutorIds()
            return [str(ids.apply(i)) for i in range(ids.size())]
        except Exception:
            return [e.id for e in self.executors() if e.active]

    def widest_stage(self) -> int | None:
        """Tasks of the widest stage running now, the largest over the last samples (the
        status tracker's active stages: cheap, unlike scanning the retained jobs)."""
        tracker = self.sc.statusTracker()
        widest = 0
        for stage_id in tracker.getActiveStageIds():
            stage = tracker.getStageInfo(stage_id)
            if stage is not None and stage.numTasks > widest:
                widest = int(stage.numTasks)
        if widest:
            self._widths.append(widest)
        return max(self._widths) if self._widths else None

    def finished_stages(self, after_id: int, limit: int) -> list[StageRun]:
        """From the status store: its completed stages come newest first, so the walk stops at
        the first one already seen. Each stage's task quantiles are one call (the store keeps
        them cached once computed)."""
        store = self._jsc.statusStore()
        complete = self._jvm.java.util.ArrayList()
        complete.add(self._jvm.org.apache.spark.status.api.v1.StageStatus.COMPLETE)
        stages = store.stageList(complete, False, False, self._no_quantiles(), None)
        out: list[StageRun] = []
        for i in range(stages.size()):
            stage = stages.apply(i)
            stage_id = int(stage.stageId())
            if stage_id <= after_id or len(out) >= limit:
                break
            run = self._stage_run(store, stage, stage_id)
            if run is not None:
                out.append(run)
        return out

    def _stage_run(self, store: Any, stage: Any, stage_id: int) -> StageRun | None:
        summary = store.taskSummary(stage_id, int(stage.attemptId()), self._quantiles())
        if not summary.isDefined():
            return None
        found = summary.get()
        run_time = found.executorRunTime()
        median, longest = float(run_time.apply(0)), float(run_time.apply(1))
        records = float(stage.inputRecords()) + float(stage.shuffleReadRecords())
        largest = float(found.inputMetrics().recordsRead().apply(1)) + float(
            found.shuffleReadMetrics().readRecords().apply(1)
        )
        return StageRun(
            stage_id=stage_id,
            name=str(stage.name()),
            tasks=int(stage.numTasks()),
            median_task_ms=median,
            max_task_ms=longest,
            largest_partition_share=min(1.0, largest / records) if records > 0 else None,
        )

    def _quantiles(self) -> Any:
        """The median and the maximum, as the Java ``double[]`` the store takes."""
        if self._median_max is None:
            array = self.sc._gateway.new_array(self._jvm.double, 2)
            array[0], array[1] = 0.5, 1.0
            self._median_max = array
        return self._median_max

    def _no_quantiles(self) -> Any:
        if self._none is None:
            self._none = self.sc._gateway.new_array(self._jvm.double, 0)
        return self._none

    # ---- actions ------------------------------------------------------------------------------

    def request_total(self, count: int) -> bool:
        empty = self._jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(
            self._jvm.java.util.HashMap()
        )
        return bool(self._jsc.requestTotalExecutors(int(count), 0, empty))

    def kill(self, executor_ids: Sequence[str]) -> bool:
        if not executor_ids:
            return True
        ids = self._jvm.java.util.ArrayList()
        for executor_id in executor_ids:
            ids.add(str(executor_id))
        seq = self._jvm.org.apache.spark.api.python.PythonUtils.toSeq(ids)
        return bool(self._jsc.killExecutors(seq))


def _host(host_port: str) -> str | None:
    """The host of Spark's ``host:port`` (``None`` when empty)."""
    host = host_port.rsplit(":", 1)[0] if ":" in host_port else host_port
    return host or None
