"""The cluster as a Spark standalone master sees it: its workers, their cores and the cores in use.

Reads the master's JSON status (``http://MASTER:8080/json/``, the web UI port). Each ALIVE
worker is a node: ``cores``/``memory`` are what it offers, ``coresused``/``memoryused`` what
executors hold. Executors are the real ones, so ``holdings`` are not needed. When the master
does not answer, the last view is reused (with a warning) so a round can still run.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from scheduler.cluster.port import Holding
from scheduler.core.model import ClusterView, NodeView

log = structlog.get_logger("henge.cluster.spark_standalone")


class MasterUnreachableError(RuntimeError):
    pass


def view_from_status(status: dict[str, Any]) -> ClusterView:
    """A :class:`ClusterView` from the master's ``/json/`` document."""
    nodes = []
    for worker in status.get("workers") or ():
        nodes.append(
            NodeView(
                name=str(worker.get("id") or worker.get("host")),
                cores=float(worker.get("cores") or 0),
                memory_mb=float(worker.get("memory") or 0),
                cores_requested=float(worker.get("coresused") or 0),
                memory_requested_mb=float(worker.get("memoryused") or 0),
                ready=worker.get("state") == "ALIVE",
            )
        )
    return ClusterView(tuple(nodes))


@dataclass
class SparkStandaloneCluster:
    master_ui_url: str
    """The master's web UI, e.g. ``http://127.0.0.1:8080``."""
    timeout_s: float = 5.0
    name: str = "spark-standalone"
    _last: ClusterView | None = field(default=None, repr=False)

    def status(self) -> dict[str, Any]:
        url = f"{self.master_ui_url.rstrip('/')}/json/"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as response:
                return json.loads(response.read().decode())
        except (OSError, ValueError) as exc:
            raise MasterUnreachableError(f"{url}: {exc}") from exc

    def view(self, holdings: Sequence[Holding]) -> ClusterView:
        try:
            self._last = view_from_status(self.status())
        except MasterUnreachableError as exc:
            if self._last is None:
                raise
            log.warning("cluster.stale_view", source=self.name, error=str(exc))
        return self._last


def cores_per_application(status: dict[str, Any]) -> dict[str, int]:
    """Cores each running application holds, by application name, from the master's ``/json/``
    document (its ``activeapps``). With one core per executor this is the executor count."""
    held: dict[str, int] = {}
    for app in status.get("activeapps") or ():
        name = str(app.get("name"))
        held[name] = held.get(name, 0) + int(app.get("cores") or 0)
    return held
