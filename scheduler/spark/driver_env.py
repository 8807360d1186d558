"""A tenant's driver environment for tests and measurements: the henge-agent wheel built from
``agent/`` and installed with pip into a fresh virtualenv next to PySpark, as a tenant installs
it (not the source tree the development virtualenv points at).

pip runs with the machine's own configuration (its index and cache); PySpark and pyarrow are
pinned to the versions installed here, so pip finds them in its cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

PIP_TIMEOUT_S = 600
BUILD_TIMEOUT_S = 300
AGENT_DISTRIBUTION = "henge-agent"

# Lists every installed distribution with its declared requirements, run inside a virtualenv.
_LIST_DISTRIBUTIONS = (
    "import importlib.metadata as m, json;"
    "print(json.dumps({d.metadata['Name']: d.requires or [] for d in m.distributions()}))"
)


class DriverEnvError(RuntimeError):
    """Building the wheel or the virtualenv failed; carries the tool's output."""


def clean_environment() -> dict[str, str]:
    """This process's environment without what would leak the development virtualenv (or the
    source tree) into a child Python."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV", "PYTHONSTARTUP"}
    return {key: value for key, value in os.environ.items() if key not in drop}


def run(command: list[str], timeout_s: float, cwd: Path | None = None) -> str:
    done = subprocess.run(
        command,
        cwd=cwd,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise DriverEnvError(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}\n"
            f"{done.stderr[-3000:]}"
        )
    return done.stdout


def build_agent_wheel(source: Path, out_dir: Path) -> Path:
    """``python -m build --wheel`` of the henge-agent project at ``source``; the wheel's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out_dir), str(source)],
        BUILD_TIMEOUT_S)  # fmt: skip
    wheels = sorted(out_dir.glob("henge_agent-*-py3-none-any.whl"))
    if len(wheels) != 1:
        raise DriverEnvError(f"expected one henge-agent wheel in {out_dir}, found {wheels}")
    return wheels[0]


def create_venv(path: Path) -> Path:
    """A fresh virtualenv (pip and what ``venv`` seeds, nothing else); its python."""
    run([sys.executable, "-m", "venv", str(path)], PIP_TIMEOUT_S)
    return path / "bin" / "python"


def pip_install(python: Path, *requirements: str) -> None:
    run([str(python), "-m", "pip", "install", "--quiet", *requirements], PIP_TIMEOUT_S)


def pinned(distribution: str) -> str:
    """``name==version`` of a distribution installed here (from the project's pins)."""
    return f"{distribution}=={version(distribution)}"


def distributions(python: Path) -> dict[str, list[str]]:
    """Every distribution installed for ``python``, with its Requires-Dist lines."""
    listed = json.loads(run([str(python), "-c", _LIST_DISTRIBUTIONS], PIP_TIMEOUT_S))
    return {str(name): list(requires) for name, requires in listed.items()}


def driver_environment(path: Path, wheel: Path, reuse: bool = False) -> Path:
    """A virtualenv for the example drivers: the agent's wheel, PySpark and pyarrow (the
    examples' Python data source needs it). Returns its python as an absolute path: Spark's
    executors start it from working folders of their own. With ``reuse``, a virtualenv already
    at ``path`` only gets ``wheel`` reinstalled (building one takes minutes)."""
    path = path.absolute()
    python = path / "bin" / "python"
    if reuse and python.exists():
        pip_install(python, "--no-deps", "--force-reinstall", str(wheel))
        return python
    python = create_venv(path)
    pip_install(python, str(wheel), pinned("pyspark"), pinned("pyarrow"))
    return python
