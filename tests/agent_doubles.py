"""The agent without Spark: a recording stand-in for its ``SparkControl`` port, the real agent
wired to it, and streaming progress as Spark serializes it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import datetime

from henge_agent.agent import Agent
from henge_agent.progress import ProgressBook
from henge_agent.spark_control import ExecutorState, StageRun
from henge_agent.transport import ReportClient


@dataclass
class FakeSpark:
    """A Spark application: executors with task time and running tasks; records resizes."""

    pool: dict[str, ExecutorState] = field(default_factory=dict)
    requested: list[int] = field(default_factory=list)
    killed: list[list[str]] = field(default_factory=list)
    confs: dict[str, str] = field(default_factory=lambda: {"spark.executor.cores": "1"})
    widest: int | None = 4
    broken: bool = False
    stages: list[StageRun] = field(default_factory=list)
    """Finished stages, oldest first."""

    def add(
        self,
        executor_id: str,
        task_ms: float = 0,
        tasks: int = 0,
        added: float = 0,
        done: int = 0,
        host: str | None = None,
    ) -> None:
        self.pool[executor_id] = ExecutorState(
            executor_id, True, 1, task_ms, tasks, added, completed_tasks=done, host=host
        )

    def executors(self) -> list[ExecutorState]:
        if self.broken:
            raise RuntimeError("py4j: connection reset")
        return list(self.pool.values())

    def live_executor_ids(self) -> list[str]:
        if self.broken:
            raise RuntimeError("py4j: connection reset")
        return [e.id for e in self.pool.values() if e.active]

    def request_total(self, count: int) -> bool:
        self.requested.append(count)
        while len(self.live_executor_ids()) < count:
            self.add(f"n{len(self.pool)}", added=time.time())
        return True

    def kill(self, executor_ids: list[str]) -> bool:
        self.killed.append(list(executor_ids))
        for executor_id in executor_ids:
            state = self.pool[executor_id]
            self.pool[executor_id] = replace(state, active=False, active_tasks=0)
        return True

    def widest_stage(self) -> int | None:
        return self.widest

    def finished_stages(self, after_id: int, limit: int) -> list[StageRun]:
        newer = [s for s in reversed(self.stages) if s.stage_id > after_id]
        return newer[:limit]

    def conf(self, key: str, default: str | None = None) -> str | None:
        return self.confs.get(key, default)


def make_agent(
    spark: FakeSpark, url: str, job_id: str = "job-1", token: str = "hga_token", **kwargs: object
) -> tuple[Agent, ProgressBook]:
    """The real agent on ``spark``, reporting to ``url`` (10-s sub-windows unless told)."""
    book = ProgressBook()
    agent = Agent(
        spark,
        ReportClient(url, job_id, token, timeout_s=2),
        book,
        **{"sub_window_s": 10.0, **kwargs},  # type: ignore[arg-type]
    )
    return agent, book


def progress(batch: int, start: datetime, rows: int, end_offset: int, latest: int) -> dict:
    """A ``StreamingQueryProgress`` as Spark 4 serializes it (fields the agent reads and more)."""
    return {
        "id": "5a0e7cc8-6dc5-45ec-898f-e5e3c42bf8d0",
        "runId": "ab78d781-ba39-4752-af54-093993de45a9",
        "name": "pageload",
        "timestamp": start.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "batchId": batch,
        "batchDuration": 1500,
        "numInputRows": rows,
        "inputRowsPerSecond": rows / 2.0,
        "processedRowsPerSecond": rows / 1.5,
        "durationMs": {"addBatch": 1200, "commitOffsets": 40, "getBatch": 0, "latestOffset": 3,
                       "queryPlanning": 95, "triggerExecution": 1500, "walCommit": 60},
        "eventTime": {"watermark": "2026-11-22T12:00:00.000Z"},
        "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 12,
                            "numRowsUpdated": 4, "memoryUsedBytes": 9000}],
        "sources": [{
            "description": "org.apache.spark.sql.execution.datasources.v2.python."
                           "PythonMicroBatchStreamWithAdmissionControl@7f914d0f",
            "startOffset": f'{{"rows":{end_offset - rows}}}',
            "endOffset": f'{{"rows":{end_offset}}}',
            "latestOffset": f'{{"rows":{latest}}}',
            "numInputRows": rows,
            "inputRowsPerSecond": rows / 2.0,
            "processedRowsPerSecond": rows / 1.5,
            "metrics": {},
        }],
        "sink": {"description": "org.apache.spark.sql.execution.datasources.noop.NoopTable$@1",
                 "numOutputRows": -1, "metrics": {}},
    }  # fmt: skip
