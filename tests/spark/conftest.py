"""Real Spark: a standalone master and worker on loopback (PySpark's own), and the example jobs
run as driver processes. Tests that need them skip, saying why, only when Java or PySpark
(with pyarrow, which Python data sources need) is missing.

The drivers run the agent as a tenant installs it: the henge-agent wheel is built from
``agent/`` once per session and pip-installed, with PySpark and pyarrow, into a virtualenv of its
own (``driver_python``); the drivers and their executors' Python workers run that virtualenv's
python, which cannot see this repository's sources."""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scheduler.spark.local_cluster import LocalCluster, java_available
from scheduler.testing.driver_env import build_agent_wheel, clean_environment, driver_environment

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "spark"
AGENT_PROJECT = ROOT / "agent"


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


@dataclass
class App:
    """An example job running as its own driver process."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    status_path: Path
    extra: dict[str, Any] = field(default_factory=dict)

    def status(self) -> dict[str, Any]:
        try:
            return json.loads(self.status_path.read_text())
        except (OSError, ValueError):
            return {}

    def log_tail(self, chars: int = 4000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        lines = [ln for ln in text.splitlines() if not ln.startswith("\tat ")]
        return "\n".join(lines)[-chars:]

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, grace_s: float = 30.0) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def driver_env(python: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A driver's environment: ``python`` for the executors' Python workers too, nothing that
    points back at the development virtualenv, no agent settings but those in ``extra``."""
    env = {k: v for k, v in clean_environment().items() if not k.startswith("HENGE_")}
    return {**env, "PYSPARK_PYTHON": str(python), **(extra or {})}


def start_app(
    example: str,
    args: list[str],
    workdir: Path,
    python: Path,
    name: str | None = None,
    env: dict[str, str] | None = None,
) -> App:
    """Run an example as a driver process with ``python`` (see :func:`driver_python`)."""
    name = name or example
    log_path = workdir / f"{name}.log"
    status_path = workdir / f"{name}.status.json"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                str(python), str(EXAMPLES / example / "app.py"),
                "--status-file", str(status_path),
                "--checkpoint", str(workdir / f"{name}-checkpoint"),
                *args,
            ],
            cwd=ROOT,
            env=driver_env(python, env),
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    return App(name, process, log_path, status_path)


def assert_agent_from_wheel(app: App, python: Path) -> None:
    """The driver ran the agent installed in its virtualenv, not this repository's sources."""
    loaded = app.status().get("agent_file")
    assert loaded, app.status()
    venv = python.parent.parent
    assert Path(loaded).is_relative_to(venv), loaded
    assert not Path(loaded).is_relative_to(AGENT_PROJECT), loaded


def wait_for(
    what: str,
    check: Callable[[], Any],
    timeout_s: float,
    apps: tuple[App, ...] = (),
    interval_s: float = 0.5,
) -> Any:
    """Poll ``check`` until it returns something truthy; fail with the apps' logs if not."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        for app in apps:
            if not app.alive():
                pytest.fail(f"{app.name} exited ({app.process.returncode}) while waiting for "
                            f"{what}:\n{app.log_tail()}")  # fmt: skip
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {a.name} {a.status()}\n{a.log_tail()}" for a in apps)
            pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}\n{logs}")
        time.sleep(interval_s)
