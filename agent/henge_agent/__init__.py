"""The Henge agent, inside the tenant's PySpark driver (DESIGN §5.3).

    import henge_agent
    henge_agent.attach(spark)

reads the Henge API's URL and the job's id from the Spark conf (``spark.henge.url``,
``spark.henge.jobId``) or the driver's environment (``HENGE_URL``, ``HENGE_JOB_ID``), and the
job's agent token from ``HENGE_AGENT_TOKEN`` or the file named by ``HENGE_AGENT_TOKEN_FILE``,
never from the Spark conf (:mod:`henge_agent.settings` lists every setting).

It listens to the streaming queries' progress, measures executor busy time from Spark's status
store, posts one report per sub-window and applies the answer's ``target_executors`` live with
``requestTotalExecutors`` / ``killExecutors`` (idle executors first). It depends on PySpark and
the standard library only (a test checks), and never raises into the job once started: an
unreachable scheduler or an answer it cannot use means the executors stay as they are while
reports are retried with backoff. :func:`attach` refuses to start, with :class:`AgentRefused`,
when a setting is missing or wrong (:class:`AgentConfigError`, naming it and where to set it)
or when Spark dynamic allocation is on (both would resize the job).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from henge_agent.agent import Agent, AgentStats
from henge_agent.errors import AgentConfigError, AgentRefused
from henge_agent.progress import ProgressBook
from henge_agent.settings import AgentSettings, settings_from
from henge_agent.transport import ReportClient

__all__ = [
    "Agent",
    "AgentConfigError",
    "AgentRefused",
    "AgentSettings",
    "AgentStats",
    "attach",
    "check_application",
]

log = logging.getLogger("henge.agent")


_DYNAMIC_KEYS = ("spark.dynamicAllocation.enabled", "spark.streaming.dynamicAllocation.enabled")


def check_application(conf: Mapping[str, str]) -> None:
    """Raise :class:`AgentRefused` when the application cannot be resized by the agent.

    ``conf``: the application's Spark conf as a mapping.
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
    url: str | None = None,
    job_id: str | None = None,
    token: str | None = None,
    *,
    sub_window_s: float | None = None,
    min_executors: int | None = None,
    max_executors: int | None = None,
    initial_executors: int | None = None,
    timeout_s: float | None = None,
    max_backoff_s: float | None = None,
    resize: bool | None = None,
    start: bool = True,
) -> Agent:
    """Attach the agent to ``spark`` (a classic ``SparkSession``) and start it.

    Every argument left out is looked up in the Spark conf, then the environment
    (:mod:`henge_agent.settings`). ``min_executors``/``max_executors``: the job's bounds as
    registered; a target outside them is ignored with a log line. ``initial_executors``: resize
    to this at once (a standalone master otherwise gives a new application every free core
    until the first answer). ``resize=False``: report only, for jobs the spark-operator realizer
    resizes. Raises :class:`AgentConfigError` when a setting is missing or invalid, and
    :class:`AgentRefused` when dynamic allocation is on or the session has no ``SparkContext``
    (Spark Connect).
    """
    sc = _spark_context(spark)
    conf = _conf_of(sc)
    check_application(conf)
    arguments = {
        "url": url,
        "job_id": job_id,
        "token": token,
        "sub_window_s": sub_window_s,
        "min_executors": min_executors,
        "max_executors": max_executors,
        "initial_executors": initial_executors,
        "timeout_s": timeout_s,
        "max_backoff_s": max_backoff_s,
        "resize": resize,
    }
    settings = settings_from(conf, os.environ, arguments)
    _warn_on_local_master(str(sc.master or ""))
    agent = _wire(spark, sc, settings)
    if start:
        agent.start()
        log.info(
            "henge agent: reporting job %s to %s every %g s (started %s)",
            settings.job_id,
            settings.url,
            settings.sub_window_s,
            time.strftime("%H:%M:%S"),
        )
    return agent


def _spark_context(spark: Any) -> Any:
    try:
        sc = spark.sparkContext
        sc._jsc.sc()
    except Exception as exc:
        raise AgentRefused(
            "Henge agent refused to start: the session has no SparkContext in this process "
            f"(Spark Connect?); attach it in the driver of a classic PySpark application ({exc})"
        ) from None
    return sc


def _conf_of(sc: Any) -> Mapping[str, str]:
    return {str(key): str(value) for key, value in sc.getConf().getAll()}


def _warn_on_local_master(master: str) -> None:
    if master.startswith("local"):
        log.warning(
            "henge agent: master %s runs no separate executors; reports go out but resizing "
            "does nothing",
            master,
        )


def _wire(spark: Any, sc: Any, settings: AgentSettings) -> Agent:
    """The agent over this application, its listener registered (not started yet)."""
    from henge_agent.listener import make_listener
    from henge_agent.spark_control import PySparkControl

    book = ProgressBook()
    client = ReportClient(settings.url, settings.job_id, settings.token, settings.timeout_s)
    agent = Agent(
        PySparkControl(sc),
        client,
        book,
        sub_window_s=settings.sub_window_s,
        min_executors=settings.min_executors,
        max_executors=settings.max_executors,
        initial_executors=settings.initial_executors,
        max_backoff_s=settings.max_backoff_s,
        resize=settings.resize,
        task_figures=settings.task_figures,
    )
    listener = make_listener(book, agent.stats)
    spark.streams.addListener(listener)

    def remove_listener() -> None:
        spark.streams.removeListener(listener)

    agent.on_stop.append(remove_listener)
    for query in spark.streams.active:  # queries started before the agent
        book.started(str(query.runId))
    return agent
