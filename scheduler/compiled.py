"""The core modules compiled to C extensions with mypyc, and whether those builds are current.

``make setup`` compiles the modules a round's decision runs through (``scripts/compile_core.py``):
``decide()`` then takes about half the time it takes as plain Python, with the same plans (the
source is the same; ``tests/unit/core/test_compiled.py`` compares the two). Python imports an
extension module in preference to the ``.py`` beside it, so an extension older than its source
would run code that is no longer on disk: :func:`stale_modules` finds those, and the ``henge``
command and the test suite refuse to start with one (``make setup`` rebuilds them, ``make
uncompile`` removes them to run the plain source).

Nothing here is imported by the core: it only reads file times.
"""

from __future__ import annotations

import importlib.machinery
from pathlib import Path

COMPILED_MODULES: tuple[str, ...] = (
    "scheduler.core.slo",
    "scheduler.core.model",
    "scheduler.core.bounds",
    "scheduler.core.cluster",
    "scheduler.core.allocation",
    "scheduler.core.safety",
    "scheduler.core.freshness",
    "scheduler.core.admission",
    "scheduler.core.decide",
    "scheduler.core.policies.timers",
    "scheduler.core.policies.henge.model",
    "scheduler.core.policies.henge.outlook",
    "scheduler.core.policies.henge.allocate",
    "scheduler.core.policies.henge.sizing",
    "scheduler.core.policies.henge.product_state",
    "scheduler.core.policies.henge.product",
    # (it subclasses the product policy, and an interpreted class cannot subclass a compiled one)
    "scheduler.core.policies.utilitarian",
)
"""The modules ``scripts/compile_core.py`` compiles, all in one group."""

GROUP = "henge_core"
"""Name of the shared library the group's modules load (``henge_core__mypyc.*.so``, beside the
``scheduler`` package)."""

_ROOT = Path(__file__).resolve().parent.parent


def source_path(module: str, root: Path = _ROOT) -> Path:
    """The ``.py`` file of ``module`` under ``root`` (the folder holding ``scheduler/``)."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


def extension_paths(module: str, root: Path = _ROOT) -> list[Path]:
    """The compiled extensions of ``module`` under ``root`` (none when it runs as plain Python)."""
    source = source_path(module, root)
    return [
        source.with_name(source.stem + suffix)
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
        if source.with_name(source.stem + suffix).exists()
    ]


def compiled_modules(root: Path = _ROOT) -> list[str]:
    """The modules of :data:`COMPILED_MODULES` that have a compiled extension under ``root``."""
    return [m for m in COMPILED_MODULES if extension_paths(m, root)]


def stale_modules(root: Path = _ROOT) -> list[str]:
    """Source files changed after their module was compiled (the extension would run old code)."""
    stale = []
    for module in COMPILED_MODULES:
        source = source_path(module, root)
        built = extension_paths(module, root)
        if built and source.exists():
            oldest = min(p.stat().st_mtime for p in built)
            if source.stat().st_mtime > oldest:
                stale.append(str(source.relative_to(root)))
    return stale


def stale_message(stale: list[str]) -> str:
    """What to tell someone about to run old compiled code."""
    return (
        f"the compiled core is older than its source ({', '.join(stale[:3])}"
        f"{' …' if len(stale) > 3 else ''}): run `make setup` to rebuild it, or `make uncompile` "
        "to run the plain Python source"
    )
