"""``scheduler/core`` is pure: no module under it imports an I/O library (DESIGN §7)."""

from __future__ import annotations

import ast
from pathlib import Path

import scheduler.core

FORBIDDEN = {
    "sqlalchemy",
    "alembic",
    "fastapi",
    "starlette",
    "httpx",
    "requests",
    "kubernetes",
    "apscheduler",
    "pyspark",
    "psycopg",
    "uvicorn",
    "socket",
    "subprocess",
    "urllib",
    "structlog",
}

CORE = Path(scheduler.core.__file__).parent


def imported_roots(source: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and getattr(node.func, "id", getattr(node.func, "attr", None))
            in {"__import__", "import_module"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            roots.add(node.args[0].value.split(".")[0])
    return roots


def test_core_modules_import_no_io_library() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 5  # the walk found the package
    offenders = {
        str(path.relative_to(CORE)): sorted(imported_roots(path.read_text()) & FORBIDDEN)
        for path in files
    }
    offenders = {name: found for name, found in offenders.items() if found}
    assert offenders == {}


def test_the_purity_check_catches_forbidden_imports() -> None:
    sample = (
        "import socket\nfrom sqlalchemy.orm import Session\nimport os.path\n"
        "from . import model\nimportlib.import_module('httpx')\n"
    )
    assert imported_roots(sample) & FORBIDDEN == {"socket", "sqlalchemy", "httpx"}
