"""The compiled core (``make setup``, :mod:`scheduler.compiled`) makes the plans the plain
Python source makes, to the last digit."""

from __future__ import annotations

import importlib.machinery
import os
import shutil
import subprocess
import sys
from pathlib import Path

import scheduler
from scheduler.compiled import COMPILED_MODULES, compiled_modules, stale_modules
from tests.unit.core.plan_fingerprint import fingerprint

HERE = Path(__file__).parent


def test_the_suite_runs_the_compiled_core() -> None:
    assert compiled_modules() == list(COMPILED_MODULES), "run `make setup` to compile the core"
    assert stale_modules() == []


def test_compiled_and_plain_source_make_the_same_plans(tmp_path: Path) -> None:
    package = Path(scheduler.__file__).parent
    shutil.copytree(
        package, tmp_path / "scheduler", ignore=shutil.ignore_patterns("*.so", "__pycache__")
    )
    plain = subprocess.run(
        [sys.executable, str(HERE / "plan_fingerprint.py")],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    digest, decide_file = plain.stdout.split()
    assert decide_file == str(tmp_path / "scheduler" / "core" / "decide.py")
    assert fingerprint() == digest


def test_a_source_newer_than_its_extension_is_stale(tmp_path: Path) -> None:
    source = tmp_path / "scheduler" / "core" / "slo.py"
    source.parent.mkdir(parents=True)
    source.write_text("")
    built = source.with_name("slo" + importlib.machinery.EXTENSION_SUFFIXES[0])
    built.write_bytes(b"")
    os.utime(built, (1_000_000, 1_000_000))
    os.utime(source, (2_000_000, 2_000_000))
    assert stale_modules(tmp_path) == ["scheduler/core/slo.py"]
    os.utime(built, (3_000_000, 3_000_000))
    assert stale_modules(tmp_path) == []
