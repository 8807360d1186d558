"""The spark-standalone cluster view on the master's JSON status (as a 4.3 master serves it)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.cluster.spark_standalone import (
    MasterUnreachableError,
    SparkStandaloneCluster,
    cores_per_application,
    view_from_status,
)

STATUS: dict[str, Any] = {
    "url": "spark://127.0.0.1:55599",
    "workers": [
        {"id": "worker-20261122123135-127.0.0.1-32879", "host": "127.0.0.1", "port": 32879,
         "webuiaddress": "http://127.0.0.1:39371", "cores": 6, "coresused": 5, "coresfree": 1,
         "memory": 6144, "memoryused": 2560, "memoryfree": 3584, "resources": {},
         "resourcesused": {}, "resourcesfree": {}, "state": "ALIVE",
         "lastheartbeat": 1795350696484},
        {"id": "worker-20261122110002-127.0.0.1-40111", "host": "127.0.0.1", "port": 40111,
         "webuiaddress": "http://127.0.0.1:40112", "cores": 4, "coresused": 0, "coresfree": 4,
         "memory": 4096, "memoryused": 0, "memoryfree": 4096, "resources": {},
         "resourcesused": {}, "resourcesfree": {}, "state": "DEAD",
         "lastheartbeat": 1795340000000},
    ],
    "aliveworkers": 1, "cores": 6, "coresused": 5, "memory": 6144, "memoryused": 2560,
    "resources": [{}], "resourcesused": [{}],
    "activeapps": [
        {"id": "app-20261122124509-0003", "starttime": 1795351509012, "name": "pageload",
         "cores": 4, "user": "root", "memoryperexecutor": 512, "memoryperslave": 512,
         "resourcesperexecutor": [], "resourcesperslave": [],
         "submitdate": "Sun Nov 22 12:45:09 UTC 2026", "state": "RUNNING", "duration": 120004},
        {"id": "app-20261122124611-0004", "starttime": 1795351571200, "name": "bronze",
         "cores": 1, "user": "root", "memoryperexecutor": 512, "memoryperslave": 512,
         "resourcesperexecutor": [], "resourcesperslave": [],
         "submitdate": "Sun Nov 22 12:46:11 UTC 2026", "state": "RUNNING", "duration": 58000},
    ],
    "completedapps": [
        {"id": "app-20261122120001-0000", "starttime": 1795348801000, "name": "bronze",
         "cores": 2, "user": "root", "memoryperexecutor": 512, "memoryperslave": 512,
         "resourcesperexecutor": [], "resourcesperslave": [],
         "submitdate": "Sun Nov 22 12:00:01 UTC 2026", "state": "FINISHED", "duration": 90000},
    ],
    "activedrivers": [], "completeddrivers": [], "status": "ALIVE",
}  # fmt: skip


def test_workers_are_nodes_and_their_used_cores_are_held() -> None:
    view = view_from_status(STATUS)
    alive, dead = view.nodes
    assert (alive.cores, alive.cores_requested, alive.memory_mb, alive.memory_requested_mb) == (
        6,
        5,
        6144,
        2560,
    )
    assert alive.ready and not dead.ready
    assert view.total_cores == 6
    assert view.free_cores == 1


def test_cores_per_application_counts_running_applications_only() -> None:
    assert cores_per_application(STATUS) == {"pageload": 4, "bronze": 1}
    assert cores_per_application({**STATUS, "activeapps": []}) == {}


def test_the_last_view_is_reused_when_the_master_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = SparkStandaloneCluster("http://127.0.0.1:9", timeout_s=0.5)
    with pytest.raises(MasterUnreachableError):
        cluster.view([])
    monkeypatch.setattr(cluster, "status", lambda: STATUS)
    first = cluster.view([])

    def down() -> dict[str, Any]:
        raise MasterUnreachableError("connection refused")

    monkeypatch.setattr(cluster, "status", down)
    assert cluster.view([]) is first
