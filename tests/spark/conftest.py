"""Real Spark: a standalone master and worker on loopback (PySpark's own), and the example jobs
run as driver processes. Tests that need them skip, saying why, only when Java or PySpark
(with pyarrow, which Python data sources need) is missing.

The drivers run the agent as a tenant installs it: the henge-agent wheel is built from
``agent/`` once per session and pip-installed, with PySpark and pyarrow, into a virtualenv of its
own (``driver_python``); the drivers and their executors' Python workers run that virtualenv's
python, which cannot see this repository's sources."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.spark.apps import EXAMPLES, ROOT, App, WaitFailed, driver_env, start_app, wait_for
from scheduler.spark.driver_env import build_agent_wheel, driver_environment
from scheduler.spark.local_cluster import LocalCluster, java_available

AGENT_PROJECT = ROOT / "agent"
# The launch aids are the package's (the benchmarks use them too); tests import them from here.
__all__ = ["EXAMPLES", "App", "WaitFailed", "driver_env", "start_app", "wait_for"]


def spark_unavailable() -> str | None:
    missing = [m for m in ("pyspark", "pyarrow") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (pip install -e '.[spark]')"
    return java_available()


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[LocalCluster]:
    why = spark_unavailable()
    if why:
        pytest.skip(f"real Spark unavailable: {why}")
    cluster = LocalCluster(workers=1, worker_cores=6, worker_memory="6g")
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def agent_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The henge-agent wheel, built from agent/ (what `make agent-wheel` builds)."""
    return build_agent_wheel(AGENT_PROJECT, tmp_path_factory.mktemp("agent-wheel"))


@pytest.fixture(scope="session")
def driver_python(agent_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a virtualenv holding the agent's wheel, PySpark and pyarrow only."""
    why = spark_unavailable()
    if why:
        pytest.skip(f"real Spark unavailable: {why}")
    return driver_environment(tmp_path_factory.mktemp("driver-venv") / "venv", agent_wheel)


def assert_agent_from_wheel(app: App, python: Path) -> None:
    """The driver ran the agent installed in its virtualenv, not this repository's sources."""
    loaded = app.status().get("agent_file")
    assert loaded, app.status()
    venv = python.parent.parent
    assert Path(loaded).is_relative_to(venv), loaded
    assert not Path(loaded).is_relative_to(AGENT_PROJECT), loaded
