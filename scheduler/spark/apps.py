"""The example jobs of ``examples/spark/`` run as driver processes, for tests and benchmarks.

Each driver runs with the python of a tenant's environment (:func:`driver_environment` in
:mod:`scheduler.spark.driver_env`: the henge-agent wheel, PySpark and pyarrow), which cannot see
this repository's sources. A driver writes its live state (Spark's executors, the agent's target
and counters) to a status file every 0.2 s; :class:`App` reads it back.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler.spark.driver_env import clean_environment

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "spark"


class WaitFailed(AssertionError):
    """What a run waited for did not happen in time, or a driver died meanwhile; the message
    carries the drivers' status and log tails."""


@dataclass
class App:
    """An example job running as its own driver process."""

    name: str
    process: subprocess.Popen[bytes]
    log_path: Path
    status_path: Path

    def status(self) -> dict[str, Any]:
        try:
            status: dict[str, Any] = json.loads(self.status_path.read_text())
        except (OSError, ValueError):
            return {}
        return status

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


def checkpoint_dir(workdir: Path, name: str) -> Path:
    """Where the driver named ``name`` keeps its query's checkpoint: a driver started again with
    it resumes at the offsets it reached."""
    return workdir / f"{name}-checkpoint"


def start_app(
    example: str,
    args: Sequence[str],
    workdir: Path,
    python: Path,
    name: str | None = None,
    env: dict[str, str] | None = None,
) -> App:
    """Run the example ``example`` (``examples/spark/<example>/app.py``) as a driver process
    named ``name`` with ``python``; its log, status file and checkpoint go in ``workdir``."""
    name = name or example
    log_path = workdir / f"{name}.log"
    status_path = workdir / f"{name}.status.json"
    # A status file left by an earlier driver of this name would read as this one's.
    status_path.unlink(missing_ok=True)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [
                str(python), str(EXAMPLES / example / "app.py"),
                "--app-name", name,
                "--status-file", str(status_path),
                "--checkpoint", str(checkpoint_dir(workdir, name)),
                *args,
            ],
            cwd=ROOT,
            env=driver_env(python, env),
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    return App(name, process, log_path, status_path)


def wait_for(
    what: str,
    check: Callable[[], Any],
    timeout_s: float,
    apps: Sequence[App] = (),
    interval_s: float = 0.5,
) -> Any:
    """Poll ``check`` until it returns something truthy and return it; raise
    :class:`WaitFailed` with the apps' logs when ``timeout_s`` passes or an app exits first."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        for app in apps:
            if not app.alive():
                raise WaitFailed(
                    f"{app.name} exited ({app.process.returncode}) while waiting for "
                    f"{what}:\n{app.log_tail()}"
                )
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {a.name} {a.status()}\n{a.log_tail()}" for a in apps)
            raise WaitFailed(f"timed out after {timeout_s:.0f} s waiting for {what}\n{logs}")
        time.sleep(interval_s)
