"""Figures (scheduler.sim.plots): PNG files are written, and importing the module stays cheap."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from scheduler.sim.plots import plot_cdf, plot_run
from tests.unit.sim.test_summary import ACTIONS, JOBS, SAMPLES, action, make_result, sample

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 1000


def test_plot_run_writes_a_png(tmp_path: Path) -> None:
    out = plot_run(make_result(SAMPLES, ACTIONS, JOBS), tmp_path / "run.png")
    assert out == tmp_path / "run.png"
    assert_png(out)


def test_plot_run_with_many_actions_and_no_oracle(tmp_path: Path) -> None:
    samples = [sample(t, {"A": t % 7, "B": 3}, 20) for t in range(0, 3600, 10)]
    actions = [action(t, "reconfigure", "A") for t in range(0, 3600, 20)]
    out = plot_run(make_result(samples, actions, JOBS), tmp_path / "busy.png", max_labels=5)
    assert_png(out)


def test_plot_cdf_writes_a_png(tmp_path: Path) -> None:
    results = {
        "henge": make_result(SAMPLES, ACTIONS, JOBS),
        "static": make_result(
            [sample(0, {"A": 2}, 10), sample(10, {"A": 10}, 10)], [], JOBS, policy="static"
        ),
        "empty": make_result([], [], JOBS, policy="empty"),
    }
    out = plot_cdf(results, tmp_path / "cdf.png")
    assert_png(out)


def test_importing_plots_does_not_import_matplotlib() -> None:
    code = (
        "import sys, scheduler.sim.plots\n"
        "loaded = [m for m in sys.modules if m.startswith('matplotlib')]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[3])


def test_plotting_never_uses_pyplot(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from scheduler.sim.plots import plot_run\n"
        "from tests.unit.sim.test_summary import ACTIONS, JOBS, SAMPLES, make_result\n"
        f"plot_run(make_result(SAMPLES, ACTIONS, JOBS), Path({str(tmp_path / 'p.png')!r}))\n"
        "assert 'matplotlib' in sys.modules\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[3])
