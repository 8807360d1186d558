"""What the example jobs share: command-line options, the session, the input, the agent.

Each example is an ordinary PySpark application. The agent's settings go in the Spark conf
(:func:`session`: ``spark.henge.url``, ``spark.henge.jobId``, the bounds) and the token in the
driver's environment (``HENGE_AGENT_TOKEN`` or ``HENGE_AGENT_TOKEN_FILE``); the Henge line is in
:func:`run`:

    agent = henge_agent.attach(spark)

The agent comes from the installed henge-agent distribution (``make agent-wheel``, then
``pip install dist/henge_agent-*.whl`` in the drivers' environment), not from this repository.
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# Executors start their Python workers with the driver's interpreter (the venv's).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    env = os.environ.get
    p.add_argument(
        "--master",
        default=env("SPARK_MASTER_URL", "local[2]"),
        help="Spark master (default $SPARK_MASTER_URL, else local[2])",
    )
    p.add_argument(
        "--app-name",
        help="Spark application name (default: the example's); tells apart several runs of one "
        "example on a cluster",
    )
    p.add_argument("--source", choices=("generator", "rate"), default="generator")
    p.add_argument("--rate", type=float, default=100.0, help="rows arriving per second")
    p.add_argument("--backlog", type=int, default=0, help="rows waiting at the start (generator)")
    p.add_argument("--max-rows-per-batch", type=int, default=0, help="generator; 0: no limit")
    p.add_argument("--partitions", type=int, default=4, help="tasks per batch")
    p.add_argument("--cost-us", type=float, default=0.0, help="work per row (microseconds)")
    p.add_argument("--cost-mode", choices=("spin", "sleep"), default="spin")
    p.add_argument("--control-file", help="JSON file to change the rate live (generator)")
    p.add_argument("--trigger-s", type=float, default=0.0, help="trigger interval; 0: ASAP")
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument(
        "--keyed-cost-us",
        type=float,
        default=0.0,
        help="work per row (microseconds, --cost-mode) paid after shuffling the rows by a key "
        "into --shuffle-partitions tasks; 0: no keyed stage",
    )
    p.add_argument(
        "--hot-key-share",
        type=float,
        default=0.0,
        help="the share of rows carrying one key in the keyed stage: its task takes that share "
        "of the stage's work whatever the executor count (data skew)",
    )
    p.add_argument("--executor-memory", default="512m")
    p.add_argument("--cores-max", type=int, help="spark.cores.max (caps the executors for good)")
    p.add_argument("--duration-s", type=float, default=0.0, help="stop after this; 0: run on")
    p.add_argument("--checkpoint", help="checkpoint directory (default: a temporary one)")
    p.add_argument("--status-file", help="write executors, target and agent stats here (JSON)")
    p.add_argument("--henge-url", default=env("HENGE_URL"), help="scheduler URL ($HENGE_URL)")
    p.add_argument("--job-id", default=env("HENGE_JOB_ID"), help="job id ($HENGE_JOB_ID)")
    p.add_argument(
        "--token",
        help="the job's agent token (default: the agent reads $HENGE_AGENT_TOKEN or the file "
        "named by $HENGE_AGENT_TOKEN_FILE)",
    )
    p.add_argument("--sub-window-s", type=float, default=10.0)
    p.add_argument("--min-executors", type=int)
    p.add_argument("--max-executors", type=int)
    p.add_argument("--initial-executors", type=int, default=1)
    p.add_argument(
        "--dynamic-allocation",
        action="store_true",
        help="turn Spark dynamic allocation on (the agent then refuses to start)",
    )
    return p  # fmt: skip


def session(app_name: str, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(args.master)
        .appName(app_name)
        .config("spark.executor.cores", "1")
        .config("spark.executor.memory", args.executor_memory)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.dynamicAllocation.enabled", str(bool(args.dynamic_allocation)).lower())
    )
    if args.cores_max:
        builder = builder.config("spark.cores.max", str(args.cores_max))
    for key, value in henge_conf(args).items():
        builder = builder.config(key, value)
    if args.dynamic_allocation:
        builder = builder.config("spark.shuffle.service.enabled", "false").config(
            "spark.dynamicAllocation.shuffleTracking.enabled", "true"
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    import generator
    from pyspark import cloudpickle

    # Ship the generator's code by value: Spark's Python workers cannot import this directory.
    cloudpickle.register_pickle_by_value(generator)
    spark.dataSource.register(generator.HengeGenerator)
    return spark


def henge_conf(args: argparse.Namespace) -> dict[str, str]:
    """The agent's settings as Spark conf keys (never the token: the conf is no secret)."""
    if not args.henge_url:
        return {}
    conf = {
        "spark.henge.url": args.henge_url,
        "spark.henge.jobId": args.job_id,
        "spark.henge.subWindowSeconds": args.sub_window_s,
        "spark.henge.minExecutors": args.min_executors,
        "spark.henge.maxExecutors": args.max_executors,
        "spark.henge.initialExecutors": args.initial_executors,
    }
    return {key: str(value) for key, value in conf.items() if value is not None}


def input_stream(spark, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The job's input with its per-row cost paid: the generator pays it as it reads; on the
    rate source a ``mapInArrow`` stage pays it."""
    if args.source == "generator":
        reader = (
            spark.readStream.format("henge_generator")
            .option("rate", args.rate)
            .option("backlog", args.backlog)
            .option("max_rows_per_batch", args.max_rows_per_batch)
            .option("partitions", args.partitions)
            .option("cost_us", args.cost_us)
            .option("cost_mode", args.cost_mode)
        )
        if args.control_file:
            reader = reader.option("control_file", args.control_file)
        return keyed(reader.load(), args)
    from pyspark.sql import functions as F

    rate = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", int(args.rate))
        .option("numPartitions", args.partitions)
        .load()
    )
    from generator import WORDS

    words = F.array(*[F.lit(w) for w in WORDS])
    shaped = rate.select(
        F.col("value").alias("id"),
        F.col("timestamp").alias("ts"),
        F.concat(F.lit("/page/"), (F.col("value") * 7919 % 50).cast("string")).alias("page"),
        F.element_at(F.array(*[F.lit(r) for r in ("eu", "us", "asia", "sa")]),
                     (F.col("value") * 31 % 4 + 1).cast("int")).alias("region"),
        (F.lit(50.0) + F.col("value") * 104729 % 3000 / 3.0).alias("load_ms"),
        F.element_at(words, (F.col("value") * 13 % F.size(words) + 1).cast("int")).alias("word"),
    )  # fmt: skip
    return keyed(paid(shaped, args.cost_us, args.cost_mode), args)


def paid(frame, cost_us: float, mode: str):  # type: ignore[no-untyped-def]
    """``frame`` with a ``mapInArrow`` stage that pays ``cost_us`` per row."""
    if cost_us <= 0:
        return frame
    from generator import burn

    def pay(batches):  # type: ignore[no-untyped-def]
        for batch in batches:
            burn(batch.num_rows, cost_us, mode)
            yield batch

    return frame.mapInArrow(pay, frame.schema)


def keyed(frame, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """With --keyed-cost-us: the rows shuffled by a key (--hot-key-share of them on one key)
    into --shuffle-partitions tasks, each row's cost paid after the shuffle."""
    if args.keyed_cost_us <= 0:
        return frame
    from pyspark.sql import functions as F

    # Spread by a hash of the id, so that the hot rows are mixed through every batch.
    hot = F.col("id") * 2654435761 % 1000 < round(args.hot_key_share * 1000)
    key = F.when(hot, F.lit(-1)).otherwise(F.col("id") % 997)
    shuffled = frame.withColumn("key", key).repartition(args.shuffle_partitions, "key")
    cost_us, mode = args.keyed_cost_us, args.cost_mode

    from generator import burn

    def pay(_: int) -> bool:  # (a row at a time: no pandas needed on the executors)
        burn(1, cost_us, mode)
        return True

    # Nondeterministic, so that the optimizer leaves the filter after the shuffle.
    paying = F.udf(pay, "boolean").asNondeterministic()
    return shuffled.where(paying(F.col("key"))).drop("key")


def run(app_name: str, build: Callable, args: argparse.Namespace) -> int:  # type: ignore[type-arg]
    """Start the session, the query ``build(spark, input)`` and (with --henge-url) the agent;
    run until --duration-s or a signal."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    app_name = args.app_name or app_name
    spark = session(app_name, args)
    agent = None
    if args.henge_url:
        import henge_agent

        try:
            agent = henge_agent.attach(spark, token=args.token)
        except henge_agent.AgentRefused as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            spark.stop()
            return 2
    checkpoint = args.checkpoint or f"/tmp/henge-example-{app_name}-{os.getpid()}"
    query = build(spark, input_stream(spark, args)).option("checkpointLocation", checkpoint)
    if args.trigger_s > 0:
        query = query.trigger(processingTime=f"{args.trigger_s} seconds")
    running = query.queryName(app_name).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    watcher = StatusWriter(spark, agent, args.status_file, running) if args.status_file else None
    if watcher:
        watcher.start()
    try:
        deadline = time.monotonic() + args.duration_s if args.duration_s > 0 else None
        while not stop.is_set() and running.isActive:
            if deadline is not None and time.monotonic() >= deadline:
                break
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        if watcher:
            watcher.stop()
        if agent is not None:
            agent.stop()
        running.stop()
        spark.stop()
    return 0


class StatusWriter(threading.Thread):
    """Writes what the tests and the benchmark read: Spark's live executors, the agent's target
    and counters, and how long each resize took to show in Spark (polled every 0.2 s)."""

    def __init__(self, spark, agent, path: str, query) -> None:  # type: ignore[no-untyped-def]
        super().__init__(name="status-writer", daemon=True)
        self.spark, self.agent, self.path, self.query = spark, agent, Path(path), query
        self._stop_event = threading.Event()
        self.resize_latencies: list[dict] = []
        self._open: dict | None = None

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)
        self._write()

    def run(self) -> None:
        while not self._stop_event.wait(0.2):
            try:
                self._write()
            except Exception as exc:  # the status file is a test aid; never stop the job
                logging.getLogger("example").debug("status: %s", exc)

    def _live(self) -> int:
        ids = self.spark.sparkContext._jsc.sc().getExecutorIds()
        return int(ids.size())

    def _write(self) -> None:
        live = self._live()
        now = time.time()
        stats = self.agent.stats if self.agent is not None else None
        if stats is not None and stats.resizes:
            last = stats.resizes[-1]
            if self._open is None or self._open["at"] != last["at"]:
                self._open = {"at": last["at"], "from": last["from"], "to": last["to"]}
            if "reached_s" not in self._open and live == self._open["to"]:
                self._open["reached_s"] = round(now - self._open["at"], 3)
                self.resize_latencies.append(dict(self._open))
        progress = self.query.lastProgress
        status = {
            "time": now,
            "executors": live,
            "target": self.agent.applied if self.agent is not None else None,
            "last_batch": progress.get("batchId") if progress else None,
            "resizes": self.resize_latencies,
            # Where the agent's code was loaded from (the tests check it is the installed wheel).
            "agent_file": inspect.getfile(type(self.agent)) if self.agent is not None else None,
            "agent": None
            if stats is None
            else {
                "reports_sent": stats.reports_sent,
                "reports_failed": stats.reports_failed,
                "reports_dropped": stats.reports_dropped,
                "executors_lost": stats.executors_lost,
                "executors_replaced": stats.executors_replaced,
                "targets_applied": stats.targets_applied,
                "targets_ignored": stats.targets_ignored,
                "last_target": stats.last_target,
                "progress_events": stats.progress_events,
                "report_cpu_s": round(stats.report_cpu_s, 4),
                "listener_cpu_s": round(stats.listener_cpu_s, 4),
                "cpu_ms_per_report": stats.cpu_ms_per_report(),
            },
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(status))
        tmp.replace(self.path)
