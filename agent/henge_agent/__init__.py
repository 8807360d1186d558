"""The Henge agent, inside the tenant's PySpark driver (DESIGN §5.3).

    from henge_agent import attach
    agent = attach(spark, url="http://henge:8080", job_id="...", token="hga_...",
                   min_executors=1, max_executors=8)

It listens to the streaming queries' progress, measures executor busy time from Spark's status
store, posts one report per sub-window and applies the answer's ``target_executors`` live with
``requestTotalExecutors`` / ``killExecutors`` (idle executors first). It depends on PySpark and
the standard library only (a test checks), and never raises into the job once started: an
unreachable scheduler means the executors stay as they are while reports are retried with
backoff. :func:`attach` refuses to start, with :class:`AgentRefused`, when Spark dynamic
allocation is on (both would resize the job).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from henge_agent.agent import Agent, AgentStats
from henge_agent.progress import ProgressBook
from henge_agent.transport import ReportClient

__all__ = ["Agent", "AgentRefused", "AgentStats", "attach"]

log = logging.getLogger("henge.agent")


class AgentRefused(RuntimeError):
    """The agent will not run on this application (the message says why and what to change)."""


_DYNAMIC_KEYS = ("spark.dynamicAllocation.enabled", "spark.streaming.dynamicAllocation.enabled")


def check_application(conf: Any) -> None:
    """Raise :class:`AgentRefused` when the application cannot be resized by the agent.

    ``conf`` is anything with ``get(key, default)`` (a ``SparkConf``).
    """
    for key in _DYNAMIC_KEYS:
        if str(conf.get(key, "false")).strip().lower() == "true":
            raise AgentRefused(
                f"Henge agent refused to start: {key}=true. Spark dynamic allocation would fight "
                "the scheduler over this job's executors; start the job with "
                f"--conf {key}=false (Henge sets the executor count)."
            )


def attach(
    spark: Any,
    url: str,
    job_id: str,
    token: str,
    *,
    sub_window_s: float = 10.0,
    min_executors: int | None = None,
    max_executors: int | None = None,
    initial_executors: int | None = None,
    timeout_s: float = 5.0,
    max_backoff_s: float = 60.0,
    resize: bool = True,
    start: bool = True,
) -> Agent:
    """Attach the agent to ``spark`` (a classic ``SparkSession``) and start it.

    ``min_executors``/``max_executors``: the job's bounds as registered; a target outside them
    is ignored with a log line. ``initial_executors``: resize to this at once (a standalone
    master otherwise gives a new application every free core until the first answer).
    ``resize=False``: report only, for jobs the spark-operator realizer resizes.
    Raises :class:`AgentRefused` when dynamic allocation is on or the session has no
    ``SparkContext`` (Spark Connect), ``ValueError`` on inconsistent arguments.
    """
    try:
        sc = spark.sparkContext
        sc._jsc.sc()
    except Exception as exc:
        raise AgentRefused(
            "Henge agent refused to start: the session has no SparkContext in this process "
            f"(Spark Connect?); attach it in the driver of a classic PySpark application ({exc})"
        ) from None
    check_application(sc.getConf())
    master = str(sc.master or "")
    if master.startswith("local"):
        log.warning(
            "henge agent: master %s runs no separate executors; reports go out but resizing "
            "does nothing",
            master,
        )

    from henge_agent.listener import make_listener
    from henge_agent.spark_control import PySparkControl

    book = ProgressBook()
    control = PySparkControl(sc)
    agent = Agent(
        control,
        ReportClient(url, job_id, token, timeout_s=timeout_s),
        book,
        sub_window_s=sub_window_s,
        min_executors=min_executors,
        max_executors=max_executors,
        initial_executors=initial_executors,
        max_backoff_s=max_backoff_s,
        resize=resize,
    )
    listener = make_listener(book, agent.stats)
    spark.streams.addListener(listener)

    def remove_listener() -> None:
        spark.streams.removeListener(listener)

    agent.on_stop.append(remove_listener)
    for query in spark.streams.active:  # queries started before the agent
        book.started(str(query.runId))
    if start:
        agent.start()
        log.info(
            "henge agent: reporting job %s to %s every %g s (started %s)",
            job_id,
            url,
            sub_window_s,
            time.strftime("%H:%M:%S"),
        )
    return agent
