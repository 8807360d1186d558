"""Compile the core modules named in ``scheduler/compiled.py`` with mypyc, in place.

Run by ``make setup`` with the project's virtualenv (mypy, which ships mypyc, and setuptools
come with the dev extras; gcc and the Python headers from the machine). The extensions land
beside their sources (``scheduler/core/….cpython-*.so``) and the group's shared library beside
the ``scheduler`` package; the C sources and object files go to ``build/mypyc``. Everything it
writes is ignored by git and left out of the wheel.

    .venv/bin/python scripts/compile_core.py
    /opt/build/bin/python scripts/compile_core.py --python-executable /opt/henge/bin/python

``--python-executable``: the interpreter whose installed packages (numpy, which the core imports)
mypy reads the types of, when the compiler runs from an environment of its own (the image's
builder stage).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description="Compile the core with mypyc, in place.")
    parser.add_argument("--python-executable", help="the environment whose packages mypy reads")
    args = parser.parse_args()
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    # Imported here: the build tools are needed only when compiling.
    from mypyc.build import mypycify
    from setuptools import setup

    from scheduler.compiled import COMPILED_MODULES, GROUP, built_files, source_path

    # A module renamed or taken off the list would otherwise keep its old extension, which
    # Python would still import.
    for path in built_files(ROOT):
        path.unlink()
    paths = [str(source_path(m, ROOT).relative_to(ROOT)) for m in COMPILED_MODULES]
    # The project's mypy settings also name the agent's package, which is not part of this
    # build: mypy would count the unused section as an error.
    options = ["--no-warn-unused-configs"]
    if args.python_executable:
        options += ["--python-executable", args.python_executable]
    setup(
        name=GROUP,
        packages=[],  # (the extensions only: no package discovery, nothing to install)
        py_modules=[],
        ext_modules=mypycify([*options, *paths], group_name=GROUP, target_dir="build/mypyc"),
        script_args=[
            "--quiet",
            "build_ext",
            "--inplace",
            "--build-temp",
            "build/mypyc/temp",
            "--build-lib",
            "build/mypyc/lib",
        ],
    )
    # Copied from build/mypyc/lib, the files keep the times of builds that did not change
    # them; the build's time is what ``build_problems`` compares the sources with.
    for path in built_files(ROOT):
        path.touch()


if __name__ == "__main__":
    main()
