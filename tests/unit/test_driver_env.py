"""The drivers' virtualenv: where its python is, whatever folder it was asked for from."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler.spark import driver_env


@pytest.mark.parametrize("reuse", [False, True])
def test_the_drivers_python_is_an_absolute_path_for_a_relative_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reuse: bool
) -> None:
    # Spark's executors start the driver's python from folders of their own: a path relative
    # to where the bench was started would name no file there.
    commands: list[list[str]] = []
    monkeypatch.setattr(driver_env, "run", lambda command, *_a, **_k: commands.append(command))
    monkeypatch.chdir(tmp_path)
    if reuse:
        (tmp_path / "out" / "venv" / "bin").mkdir(parents=True)
        (tmp_path / "out" / "venv" / "bin" / "python").touch()

    python = driver_env.driver_environment(Path("out/venv"), Path("henge_agent.whl"), reuse)

    assert python.is_absolute()
    assert python == tmp_path / "out" / "venv" / "bin" / "python"
    assert all(command[0] == str(python) for command in commands if "pip" in command)
