"""The server and its migrations run without the ``bench`` extra (matplotlib), and the commands
that draw say which extra to install, at once."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import httpx
import pytest
from rich.console import Console

from scheduler import demo
from tests.serving import henge_command, register_job, run_server


@pytest.fixture
def no_matplotlib(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import matplotlib`` fails, as where the extra is not installed:
    a package of that name ahead of site-packages that refuses to import."""
    blocked = tmp_path / "blocked" / "matplotlib"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('matplotlib is not installed')\n")
    path = [str(blocked.parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(path)}


def henge(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*henge_command(), *args],
        env={**os.environ, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_blocker_really_hides_matplotlib(no_matplotlib: dict[str, str], tmp_path: Path):
    probe = subprocess.run(
        [sys.executable, "-c", "import matplotlib"],
        env={**os.environ, **no_matplotlib},
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode != 0 and "matplotlib is not installed" in probe.stderr
    code = "from scheduler.sim.plots import plotting_available as a; print(a())"
    answer = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **no_matplotlib},
        capture_output=True,
        text=True,
        check=True,
    )
    assert answer.stdout.split() == ["False"]


def test_the_demo_ends_with_its_table_and_says_why_it_drew_no_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(demo, "plotting_available", lambda: False)
    buffer = StringIO()
    outcome = demo.run_demo(console=Console(file=buffer, width=200), data_dir=tmp_path, pace_s=0)
    text = " ".join(buffer.getvalue().split())
    assert "where the jobs ended" in text and outcome["summary"]["actions"]["admit"] == 4
    assert "plot: not drawn, matplotlib is missing" in text and "henge[bench]" in text
    assert outcome["plot"] is None and not list(tmp_path.glob("*.png"))


def test_migrate_and_serve_without_matplotlib(no_matplotlib: dict[str, str], fresh_pg_url: str):
    with run_server(fresh_pg_url, env=no_matplotlib) as server:
        job = register_job(server)
        admin = {"Authorization": f"Bearer {server.admin_token}"}
        listed = httpx.get(f"{server.url}/v1/jobs", headers=admin)
        assert listed.status_code == 200
        assert job["id"] in [j["id"] for j in listed.json()]
        assert "henge_" in httpx.get(f"{server.url}/metrics").text


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["bench", "--scenarios", "demo", "--seed", "1"], "henge bench"),
        (["sim", "demo", "--plot", "demo.png"], "henge sim --plot"),
    ],
)
def test_the_drawing_commands_name_the_extra_to_install(
    no_matplotlib: dict[str, str], tmp_path: Path, args: list[str], command: str
):
    result = henge(args, no_matplotlib, tmp_path)
    assert result.returncode != 0
    message = " ".join((result.stderr + result.stdout).split())
    assert f"{command} draws figures with matplotlib" in message
    assert "pip install 'henge[bench]'" in message
    assert not (tmp_path / "bench-out").exists() and not (tmp_path / "demo.png").exists()
