"""The core modules compiled to C extensions with mypyc, and whether that build is current.

``make setup`` compiles the modules a round's decision runs through (``scripts/compile_core.py``):
``decide()`` then takes less than half the time it takes as plain Python, with the same plans
(the source is the same; ``tests/unit/core/test_compiled.py`` compares the two). Python imports
an extension in preference to the ``.py`` beside it, so a build older than the source would run
code that is no longer on disk: :func:`build_problems` finds that, and the ``henge`` command and
the test suite refuse to start with one (``make setup`` rebuilds, ``make uncompile`` removes the
build to run the plain source).

Nothing here is imported by the core: it only reads file names and times.
"""

from __future__ import annotations

import importlib.machinery
from pathlib import Path

COMPILED_MODULES: tuple[str, ...] = (
    "scheduler.core.slo",
    # (the values derived from each agent report at ingestion)
    "scheduler.core.juice",
    "scheduler.core.report",
    "scheduler.core.latency",
    "scheduler.core.capacity",
    "scheduler.core.window",
    "scheduler.core.model",
    "scheduler.core.bounds",
    "scheduler.core.cluster",
    "scheduler.core.allocation",
    "scheduler.core.safety",
    "scheduler.core.freshness",
    "scheduler.core.diagnosis",
    "scheduler.core.admission",
    "scheduler.core.decide",
    "scheduler.core.policies.timers",
    "scheduler.core.policies.henge.model",
    "scheduler.core.policies.henge.outlook",
    "scheduler.core.policies.henge.allocate",
    "scheduler.core.policies.henge.sizing",
    "scheduler.core.policies.henge.rises",
    "scheduler.core.policies.henge.product_state",
    "scheduler.core.policies.henge.remedies",
    "scheduler.core.policies.henge.product",
    # (it subclasses the product policy, and an interpreted class cannot subclass a compiled one)
    "scheduler.core.policies.utilitarian",
)
"""The modules ``scripts/compile_core.py`` compiles, all in one group."""

GROUP = "henge_core"
"""Name of the group's shared library, which holds the compiled code of every module above
(``henge_core__mypyc.*.so``, beside the ``scheduler`` package); each module's own extension
only loads its part."""

_ROOT = Path(__file__).resolve().parent.parent
_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def source_path(module: str, root: Path = _ROOT) -> Path:
    """The ``.py`` file of ``module`` under ``root`` (the folder holding ``scheduler/``)."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


def built_files(root: Path = _ROOT) -> list[Path]:
    """Every extension under ``root``'s ``scheduler/``, and the group's library."""
    package = [p for p in (root / "scheduler").rglob("*.so") if p.name.endswith(_SUFFIXES)]
    return package + group_libraries(root)


def group_libraries(root: Path = _ROOT) -> list[Path]:
    return [p for p in root.glob(f"{GROUP}__mypyc*.so") if p.name.endswith(_SUFFIXES)]


def module_of(path: Path, root: Path = _ROOT) -> str | None:
    """The module of :data:`COMPILED_MODULES` whose extension ``path`` is, if any."""
    for module in COMPILED_MODULES:
        source = source_path(module, root)
        if path.parent == source.parent and any(path.name == source.stem + s for s in _SUFFIXES):
            return module
    return None


def compiled_modules(root: Path = _ROOT) -> list[str]:
    """The modules of :data:`COMPILED_MODULES` that have an extension under ``root``."""
    owners = {module_of(p, root) for p in built_files(root)}
    return [m for m in COMPILED_MODULES if m in owners]


def build_problems(root: Path = _ROOT) -> list[str]:
    """Why the compiled build under ``root`` would not run the source on disk (empty: no build,
    or a current one). The build depends on every core module, compiled or not (mypyc compiles
    against their types), so any of them changed after it makes it stale."""
    built = built_files(root)
    if not built:
        return []
    problems = []
    # (one pass over the files found: `henge` and every test session start with this check)
    owners = {p: module_of(p, root) for p in built}
    strays = [p for p, module in owners.items() if p.parent != root and module is None]
    if strays:
        problems.append(f"extensions of modules that are not compiled: {_few(strays, root)}")
    if not any(p.parent == root for p in built):
        problems.append(f"the group's library {GROUP}__mypyc*.so is missing")
    compiled = set(owners.values())
    missing = [m for m in COMPILED_MODULES if m not in compiled]
    if missing:
        problems.append(f"modules not compiled: {', '.join(missing[:3])}")
    oldest = min(p.stat().st_mtime for p in built)
    newer = [p for p in (root / "scheduler" / "core").rglob("*.py") if p.stat().st_mtime > oldest]
    if newer:
        problems.append(f"sources changed since the build: {_few(sorted(newer), root)}")
    return problems


def _few(paths: list[Path], root: Path) -> str:
    names = [p.relative_to(root).as_posix() for p in paths]
    return ", ".join(names[:3]) + (" …" if len(names) > 3 else "")


def problem_message(problems: list[str]) -> str:
    """What to tell someone about to run a compiled core that does not match the source."""
    return (
        f"the compiled core does not match the source ({'; '.join(problems)}): run `make setup` "
        "to rebuild it, or `make uncompile` to run the plain Python source"
    )
