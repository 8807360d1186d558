"""``henge_generator``: a Python streaming data source with a controllable arrival rate and backlog,
and a per-row cost, so that a job on a 2-core laptop can really be congested.

    spark.dataSource.register(HengeGenerator)
    spark.readStream.format("henge_generator")
        .option("rate", 200)              # rows arriving per second
        .option("backlog", 0)             # rows already waiting when the query starts
        .option("max_rows_per_batch", 2000)  # a batch takes at most this many (0: all)
        .option("partitions", 4)          # tasks per batch (the job's useful parallelism)
        .option("cost_us", 5000)          # work per row in microseconds, paid in the executors
        .option("cost_mode", "spin")      # spin: CPU work; sleep: waiting (an external call)
        .option("control_file", "/tmp/rate.json")  # {"rate": 400, "add_backlog": 1000} live
        .load()

Rows are ``(id, ts, page, region, load_ms, word)``, deterministic in ``id``. Offsets are
``{"rows": N}``: row positions, which the Henge agent reads as backlog (latest - end).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows

SCHEMA = "id long, ts timestamp, page string, region string, load_ms double, word string"
REGIONS = ("eu", "us", "asia", "sa")
WORDS = (
    "the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "while", "streams",
    "of", "words", "flow", "through", "henge", "and", "spark", "count", "every", "one", "of",
    "them", "twice",
)  # fmt: skip


def burn(rows: int, cost_us: float, mode: str = "spin") -> None:
    """Pay ``rows × cost_us`` microseconds of work: CPU (spin) or waiting (sleep)."""
    seconds = rows * cost_us / 1e6
    if seconds <= 0:
        return
    if mode == "sleep":
        time.sleep(seconds)
        return
    deadline = time.thread_time() + seconds
    x = 0
    while time.thread_time() < deadline:
        for i in range(200):
            x ^= i * 2654435761


def row(i: int, arrived_s: float) -> tuple:
    page = f"/page/{(i * 7919) % 50}"
    region = REGIONS[(i * 31) % len(REGIONS)]
    load_ms = 50.0 + (i * 104729) % 3000 / 3.0
    word = WORDS[(i * 13) % len(WORDS)]
    return (i, datetime.fromtimestamp(arrived_s, UTC), page, region, load_ms, word)


class _Arrivals:
    """Rows that have arrived so far: an initial backlog plus ``rate`` rows per second, with the
    rate and extra backlog adjustable through the control file."""

    def __init__(self, rate: float, backlog: int, control_file: str | None) -> None:
        self.rate = rate
        self.control_file = control_file
        self.control_mtime = 0.0
        self.base = float(backlog)
        self.since = time.time()

    def _control(self) -> None:
        if not self.control_file:
            return
        try:
            mtime = os.stat(self.control_file).st_mtime
        except OSError:
            return
        if mtime == self.control_mtime:
            return
        self.control_mtime = mtime
        try:
            with open(self.control_file) as f:
                control = json.load(f)
        except (OSError, ValueError):
            return
        now = time.time()
        self.base += self.rate * (now - self.since)
        self.since = now
        if "rate" in control:
            self.rate = float(control["rate"])
        self.base += float(control.get("add_backlog", 0))

    def available(self) -> int:
        self._control()
        return int(self.base + self.rate * (time.time() - self.since))

    def time_of(self, index: int) -> float:
        """When row ``index`` arrived (rows of the initial backlog arrived at the start)."""
        if self.rate <= 0 or index < self.base:
            return self.since
        return self.since + (index - self.base) / self.rate


class GeneratorStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict) -> None:
        self.arrivals = _Arrivals(
            float(options.get("rate", 100)),
            int(options.get("backlog", 0)),
            options.get("control_file"),
        )
        self.max_rows = int(options.get("max_rows_per_batch", 0))
        self.partition_count = max(1, int(options.get("partitions", 4)))
        self.cost_us = float(options.get("cost_us", 0))
        self.cost_mode = str(options.get("cost_mode", "spin"))

    def initialOffset(self) -> dict:
        return {"rows": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_rows) if self.max_rows > 0 else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        available = self.arrivals.available()
        if isinstance(limit, ReadMaxRows):
            return {"rows": min(available, int(start["rows"]) + limit.max_rows)}
        return {"rows": available}

    def reportLatestOffset(self) -> dict:
        return {"rows": self.arrivals.available()}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        first, last = int(start["rows"]), int(end["rows"])
        if last <= first:
            return []
        count = self.partition_count
        step = -(-(last - first) // count)
        return [
            InputPartition(
                (
                    a,
                    min(last, a + step),
                    self.arrivals.since,
                    self.arrivals.base,
                    self.arrivals.rate,
                    self.cost_us,
                    self.cost_mode,
                )
            )
            for a in range(first, last, step)
        ]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        first, last, since, base, rate, cost_us, mode = partition.value
        burn(last - first, cost_us, mode)
        for i in range(first, last):
            arrived = since if rate <= 0 or i < base else since + (i - base) / rate
            yield row(i, arrived)


class HengeGenerator(DataSource):
    @classmethod
    def name(cls) -> str:
        return "henge_generator"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: object) -> GeneratorStreamReader:
        return GeneratorStreamReader(self.options)
