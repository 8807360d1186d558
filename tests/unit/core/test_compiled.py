"""The compiled core (``make setup``, :mod:`scheduler.compiled`) makes the plans the plain
Python source makes, to the last digit; and a build that does not match the source is caught."""

from __future__ import annotations

import importlib.machinery
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import scheduler
from scheduler.compiled import COMPILED_MODULES, build_problems, compiled_modules
from scheduler.core import decide as decide_module
from tests.unit.core.plan_fingerprint import fingerprint

HERE = Path(__file__).parent
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


@pytest.mark.skipif(
    not compiled_modules(), reason="the core runs as plain Python (`make uncompile`)"
)
def test_compiled_and_plain_source_make_the_same_plans(tmp_path: Path) -> None:
    assert compiled_modules() == list(COMPILED_MODULES)
    assert decide_module.__file__ is not None and decide_module.__file__.endswith(SUFFIX)
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
        check=False,
        timeout=600,
    )
    assert plain.returncode == 0, plain.stderr
    digest, decide_file = plain.stdout.split()
    assert decide_file == str(tmp_path / "scheduler" / "core" / "decide.py")
    assert fingerprint() == digest


def _fake_build(root: Path, modules: tuple[str, ...], at: float) -> None:
    for module in modules:
        source = root.joinpath(*module.split(".")).with_suffix(".py")
        source.parent.mkdir(parents=True, exist_ok=True)
        source.touch()
        os.utime(source, (at - 10, at - 10))
        built = source.with_name(source.stem + SUFFIX)
        built.touch()
        os.utime(built, (at, at))
    library = root / f"henge_core__mypyc{SUFFIX}"
    library.touch()
    os.utime(library, (at, at))


def test_a_current_build_or_none_has_no_problem(tmp_path: Path) -> None:
    assert build_problems(tmp_path) == []
    _fake_build(tmp_path, COMPILED_MODULES, 2_000_000)
    assert build_problems(tmp_path) == []


def test_any_core_source_changed_after_the_build_makes_it_stale(tmp_path: Path) -> None:
    _fake_build(tmp_path, COMPILED_MODULES, 2_000_000)
    # A module that is not compiled counts too: the build used its types.
    settings = tmp_path / "scheduler/core/policies/henge/product_settings.py"
    settings.touch()
    os.utime(settings, (3_000_000, 3_000_000))
    (problem,) = build_problems(tmp_path)
    assert "scheduler/core/policies/henge/product_settings.py" in problem


def test_a_partial_build_or_a_stray_extension_is_a_problem(tmp_path: Path) -> None:
    _fake_build(tmp_path, COMPILED_MODULES[1:], 2_000_000)
    (problem,) = build_problems(tmp_path)
    assert COMPILED_MODULES[0] in problem

    _fake_build(tmp_path, (*COMPILED_MODULES, "scheduler.core.gone"), 2_000_000)
    (problem,) = build_problems(tmp_path)
    assert f"scheduler/core/gone{SUFFIX}" in problem

    (tmp_path / f"scheduler/core/gone{SUFFIX}").unlink()
    (tmp_path / f"henge_core__mypyc{SUFFIX}").unlink()
    (problem,) = build_problems(tmp_path)
    assert "henge_core__mypyc" in problem
