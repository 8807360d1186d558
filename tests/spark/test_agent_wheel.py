"""The henge-agent wheel as a tenant installs it: into an empty virtualenv next to PySpark, it
brings nothing of its own (only what PySpark itself requires comes along), imports with the
standard library alone, and works as ``spark-submit --py-files`` (about 30 s in all, PySpark
from pip's cache)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from scheduler.spark.driver_env import (
    AGENT_DISTRIBUTION,
    create_venv,
    distributions,
    pinned,
    pip_install,
)
from scheduler.spark.local_cluster import java_available
from tests.spark.conftest import driver_env

pytestmark = pytest.mark.agent_wheel


def required_names(requires: Iterable[str], extras: Iterable[str] = ()) -> set[str]:
    """Distributions a Requires-Dist list pulls in for this interpreter and these extras."""
    names = set()
    for line in requires:
        requirement = Requirement(line)
        marker = requirement.marker
        wanted = marker is None or any(marker.evaluate({"extra": extra}) for extra in (*extras, ""))
        if wanted:
            names.add(canonicalize_name(requirement.name))
    return names


def closure(roots: Iterable[str], installed: dict[str, list[str]]) -> set[str]:
    """``roots`` and everything their metadata requires, transitively."""
    requires = {canonicalize_name(name): lines for name, lines in installed.items()}
    seen: set[str] = set()
    todo = [canonicalize_name(root) for root in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(required_names(requires.get(name, [])) - seen)
    return seen


@dataclass(frozen=True)
class TenantVenv:
    python: Path
    before: set[str]
    """What the empty virtualenv held (the installer venv seeds)."""
    installed: dict[str, list[str]]
    """Every distribution after `pip install <wheel> pyspark==<pin>`, with its requirements."""


@pytest.fixture(scope="module")
def tenant_venv(agent_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> TenantVenv:
    python = create_venv(tmp_path_factory.mktemp("tenant-venv") / "venv")
    before = set(map(canonicalize_name, distributions(python)))
    pip_install(python, str(agent_wheel), pinned("pyspark"))
    return TenantVenv(python, before, distributions(python))


def test_the_wheel_brings_nothing_beyond_pyspark_and_its_own_requirements(
    tenant_venv: TenantVenv,
) -> None:
    installed, before = tenant_venv.installed, tenant_venv.before
    names = {canonicalize_name(name): name for name in installed}
    agent = names[canonicalize_name(AGENT_DISTRIBUTION)]
    # The agent's run-time requirements: none (PySpark is the [pyspark] extra).
    assert required_names(installed[agent]) == set(), installed[agent]
    assert required_names(installed[agent], extras=["pyspark"]) == {"pyspark"}
    allowed = closure([AGENT_DISTRIBUTION, "pyspark"], installed)
    added = set(names) - before
    assert added == allowed, f"installed beyond the metadata's closure: {added - allowed}"
    assert "py4j" in added  # PySpark's own requirement came along, and only because of it
    assert before <= {"pip", "setuptools", "wheel"}, before


def test_the_installed_agent_imports_with_the_standard_library_alone(
    tenant_venv: TenantVenv,
) -> None:
    python = tenant_venv.python
    probe = (
        "import json, sys; before = set(sys.modules);"
        "import henge_agent, henge_agent.listener, henge_agent.spark_control;"
        "loaded = {m.split('.')[0] for m in set(sys.modules) - before};"
        "print(json.dumps({'file': henge_agent.__file__, 'attach': callable(henge_agent.attach),"
        "'third_party': sorted(loaded - set(sys.stdlib_module_names) - {'henge_agent'})}))"
    )
    done = subprocess.run(
        [str(python), "-c", probe],
        env=driver_env(python),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found = json.loads(done.stdout)
    assert Path(found["file"]).is_relative_to(python.parent.parent), found
    assert found["attach"] is True
    assert found["third_party"] == []  # PySpark itself loads only when attach() needs it


_PROBE = """
import sys
import henge_agent
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
print("agent:", henge_agent.__file__)
try:
    henge_agent.attach(spark)
except henge_agent.AgentConfigError as exc:
    print("refused:", exc)
spark.stop()
"""


def test_spark_submit_py_files_runs_the_wheel_and_reads_the_spark_conf(
    tenant_venv: TenantVenv, agent_wheel: Path, tmp_path: Path
) -> None:
    why = java_available()
    if why:
        pytest.skip(f"spark-submit cannot run: {why}")
    python = tenant_venv.python
    shipped = tmp_path / "shipped" / agent_wheel.name  # apart from the installed copy
    shipped.parent.mkdir()
    shutil.copy2(agent_wheel, shipped)
    app = tmp_path / "app.py"
    app.write_text(_PROBE)
    bin_dir = python.parent
    env = driver_env(python, {"PYSPARK_DRIVER_PYTHON": str(python), "SPARK_LOCAL_IP": "127.0.0.1"})
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    done = subprocess.run(
        [
            str(bin_dir / "spark-submit"), "--master", "local[1]",
            "--conf", "spark.ui.enabled=false",
            "--conf", "spark.henge.url=http://127.0.0.1:9",
            "--py-files", str(shipped),
            str(app),
        ],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    # --py-files goes first on the driver's PYTHONPATH, ahead of the installed copy.
    assert lines["agent"].startswith(f"{shipped}/henge_agent/"), lines
    # spark.henge.url came from the conf; the job id is reported missing with where to set it.
    assert lines["refused"].startswith(
        "Henge agent refused to start: the job's id is not set. Set the Spark conf "
        "spark.henge.jobId"
    ), lines
