"""The ``StreamingQueryListener`` that feeds the agent's :class:`ProgressBook`.

PySpark turns every progress event into Python objects field by field, a few dozen calls into
the driver's JVM per event (measured at ~20 ms of driver CPU per event on a 2-core machine).
The agent needs one JSON document per event, so its listener hands PySpark a lighter adapter
for the same Java interface that asks the JVM for ``progress.json()`` (one call) instead. If
that adapter cannot be built (a PySpark without this internal), PySpark's own path is used.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from henge_agent.agent import AgentStats
from henge_agent.progress import ProgressBook

log = logging.getLogger("henge.agent")

JAVA_LISTENER = "org.apache.spark.sql.streaming.PythonStreamingQueryListener"


def _guard(action: Any) -> None:
    try:
        action()
    except Exception:
        log.exception("henge agent: could not record streaming progress")


class _JsonEvents:
    """Implements the Java listener interface over py4j, reading each event as JSON."""

    def __init__(self, book: ProgressBook, stats: AgentStats) -> None:
        self.book = book
        self.stats = stats

    def onQueryStarted(self, jevent: Any) -> None:
        _guard(lambda: self.book.started(str(jevent.runId().toString())))

    def onQueryProgress(self, jevent: Any) -> None:
        started = time.thread_time()
        _guard(lambda: self.book.record(json.loads(jevent.progress().json())))
        self.stats.listener_cpu_s += time.thread_time() - started

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        _guard(lambda: self.book.terminated(str(jevent.runId().toString())))

    class Java:
        implements = [JAVA_LISTENER]  # noqa: RUF012 (py4j's declaration)


def make_listener(book: ProgressBook, stats: AgentStats) -> Any:
    """A listener instance (the class needs PySpark, so it is built here, not at import)."""
    from pyspark.sql.streaming.listener import StreamingQueryListener

    class HengeListener(StreamingQueryListener):
        """Records progress; swallows and logs any error (a listener must not hurt the job)."""

        def onQueryStarted(self, event: Any) -> None:
            _guard(lambda: book.started(str(event.runId)))

        def onQueryProgress(self, event: Any) -> None:
            started = time.thread_time()
            _guard(lambda: book.record(event.progress))
            stats.listener_cpu_s += time.thread_time() - started

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            _guard(lambda: book.terminated(str(event.runId)))

        @property
        def _jlistener(self) -> Any:
            cached = self.__dict__.get("_henge_jlistener")
            if cached is not None:
                return cached
            try:
                from pyspark import SparkContext

                jvm = SparkContext._jvm
                if jvm is None:
                    raise RuntimeError("no JVM gateway in this process")
                wrapper = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper
                cached = wrapper(_JsonEvents(book, stats))
            except Exception as exc:
                log.debug("henge agent: JSON progress adapter unavailable (%s)", exc)
                cached = StreamingQueryListener._jlistener.fget(self)  # type: ignore[attr-defined]
            self.__dict__["_henge_jlistener"] = cached
            return cached

    return HengeListener()
