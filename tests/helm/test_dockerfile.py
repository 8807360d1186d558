"""The Dockerfile, checked without a Docker engine (none runs here).

Static checks read the Dockerfile and .dockerignore: two stages, a slim Python 3.11 final stage
holding only the builder's virtualenv, no build tools, the non-root user, ENTRYPOINT and CMD.

The replay (marked ``dockerfile``; about 30-60 s with a warm pip cache) does what the builder
stage does: it copies the build context the builder's COPY lines name (after .dockerignore)
into a scratch folder, runs the builder's RUN lines there with the virtualenv's path mapped
into the scratch folder, deletes the sources (the final stage has the virtualenv only), and
runs the installed ``henge`` as the final stage would: ``--help``, ``migrate`` on a temporary
SQLite registry (twice), and the image's ENTRYPOINT + CMD until /readyz answers 200.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|cc|make|build-essential|apt-get|apk|pip|git)\b")


# ---- parsing -----------------------------------------------------------------------------------


@dataclass
class Instruction:
    keyword: str
    args: str

    def json_args(self) -> list[str]:
        return json.loads(self.args)


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction:
        found = self.all(keyword)
        assert found, f"no {keyword} in stage {self.name or self.base}"
        return found[-1]

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for instruction in self.all("ENV"):
            for pair in shlex.split(instruction.args):
                key, _, value = pair.partition("=")
                values[key] = value
        return values


def instructions(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comment lines dropped."""
    result: list[Instruction] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = pending + line
        pending = ""
        keyword, _, args = whole.partition(" ")
        result.append(Instruction(keyword.upper(), " ".join(args.split())))
    assert not pending, "the Dockerfile ends inside a continued line"
    return result


def parse_dockerfile(path: Path = DOCKERFILE) -> list[Stage]:
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction in instructions(path.read_text()):
        if instruction.keyword == "ARG" and not stages:
            key, _, default = instruction.args.partition("=")
            args[key] = default
        elif instruction.keyword == "FROM":
            words = instruction.args.split()
            base = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), ""), words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base, name))
        else:
            assert stages, f"{instruction.keyword} before the first FROM"
            stages[-1].instructions.append(instruction)
    return stages


def copy_parts(instruction: Instruction) -> tuple[dict[str, str], list[str], str]:
    words = instruction.args.split()
    flags = dict(w[2:].partition("=")[::2] for w in words if w.startswith("--"))
    paths = [w for w in words if not w.startswith("--")]
    return flags, paths[:-1], paths[-1]


def dockerignore_excludes(relative: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern that matches the path or one of its parents wins."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern[1:] if negate else pattern
        regex = re.escape(body.strip("/")).replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
        regex = regex.replace(r"\?", "[^/]")
        if any(re.fullmatch(regex, prefix) for prefix in prefixes):
            excluded = not negate
    return excluded


def ignore_patterns() -> list[str]:
    lines = DOCKERIGNORE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse_dockerfile()


# ---- static checks -------------------------------------------------------------------------


def test_two_stages_on_slim_python_311(stages: list[Stage]) -> None:
    assert len(stages) == 2
    builder, final = stages
    assert builder.name == "builder"
    assert final.base.startswith("python:3.11-slim"), final.base
    assert builder.base == final.base


def test_final_stage_holds_only_the_virtualenv(stages: list[Stage]) -> None:
    builder, final = stages
    copies = final.all("COPY") + final.all("ADD")
    assert len(copies) == 1
    flags, sources, dest = copy_parts(copies[0])
    assert flags == {"from": "builder"}
    assert sources == [dest]
    venv = dest
    assert any(venv in run.args and "venv" in run.args for run in builder.all("RUN"))
    # No compilers, package managers or pip: the final stage only adds its user.
    for run in final.all("RUN"):
        assert not BUILD_TOOLS.search(run.args), run.args
        assert run.args.startswith("groupadd"), run.args
    assert final.env()["PATH"].startswith(f"{venv}/bin:")


def test_non_root_user_entrypoint_and_cmd(stages: list[Stage]) -> None:
    final = stages[-1]
    assert final.last("USER").args.split(":")[0] == "10001"
    assert "--uid 10001" in final.all("RUN")[0].args
    assert final.last("ENTRYPOINT").json_args() == ["henge"]
    assert final.last("CMD").json_args() == ["serve", "--host", "0.0.0.0"]
    assert final.last("EXPOSE").args == "8080"


def test_dockerignore_keeps_the_sources_and_drops_the_rest(stages: list[Stage]) -> None:
    patterns = ignore_patterns()
    sources = [s for c in stages[0].all("COPY") for s in copy_parts(c)[1]]
    required = {"pyproject.toml", "README.md", "alembic.ini", "migrations", "scheduler", "agent"}
    assert required <= set(sources)
    for kept in [
        "pyproject.toml",
        "README.md",
        "alembic.ini",
        "migrations/env.py",
        "migrations/versions/0001_initial_registry_schema.py",
        "scheduler/cli.py",
        "scheduler/sim/traces/x.csv",
        "agent/pyproject.toml",
        "agent/README.md",
        "agent/henge_agent/agent.py",
    ]:
        assert not dockerignore_excludes(kept, patterns), kept
    for dropped in [
        ".venv/bin/python",
        ".git/HEAD",
        "henge.db",
        "tests/conftest.py",
        "bench-out/x.json",
        "scheduler/__pycache__/cli.cpython-311.pyc",
        "scheduler/core/__pycache__/x.pyc",
        "deploy/helm/henge/Chart.yaml",
        "agent/dist/henge_agent-0.1.0-py3-none-any.whl",
        "agent/henge_agent/__pycache__/agent.cpython-311.pyc",
        "scheduler/core/slo.cpython-311-x86_64-linux-gnu.so",
    ]:
        assert dockerignore_excludes(dropped, patterns), dropped


# ---- replay of the builder stage, then the final stage's commands ------------------------------


@dataclass
class Installed:
    venv: Path
    env: dict[str, str]
    workdir: Path
    entrypoint: list[str]
    cmd: list[str]

    def henge(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.entrypoint, *args],
            cwd=self.workdir,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _host_path_without_dev_venv() -> str:
    dev = str(Path(sys.prefix))
    return os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not p.startswith(dev)
    )


def _clean_env() -> dict[str, str]:
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_NO_CACHE_DIR", "PIP_REQUIRE_VIRTUALENV"}
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("HENGE_")}


def _copy_context(sources: list[str], dest: Path, patterns: list[str]) -> None:
    for source in sources:
        origin = REPO / source
        if origin.is_file():
            shutil.copy2(origin, dest / Path(source).name)
            continue
        for path in origin.rglob("*"):
            relative = path.relative_to(REPO).as_posix()
            if path.is_file() and not dockerignore_excludes(relative, patterns):
                target = dest / path.relative_to(origin)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)


@pytest.fixture(scope="module")
def installed(stages: list[Stage], tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The image's virtualenv, installed by the builder stage's RUN steps: once per test run,
    however many pytest workers use it (the install takes about a minute, and the tests only
    read it), in the folder the workers' temporary folders share."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        root = tmp_path_factory.mktemp("image")
        _install_image(stages, root)
        return _image_at(stages, root)
    root = tmp_path_factory.getbasetemp().parent / "image"
    lock = root.parent / "image.lock"
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # (the others wait for the first to finish it)
        if not (root / ".installed").exists():
            shutil.rmtree(root, ignore_errors=True)
            _install_image(stages, root)
            (root / ".installed").touch()
    return _image_at(stages, root)


def _install_image(stages: list[Stage], root: Path) -> None:
    builder, final = stages
    venv_in_image = copy_parts(final.all("COPY")[0])[2]
    venv = root / venv_in_image.lstrip("/")
    workdir = root / builder.last("WORKDIR").args.lstrip("/")
    workdir.mkdir(parents=True)

    patterns = ignore_patterns()
    for copy in builder.all("COPY"):
        _flags, sources, dest = copy_parts(copy)
        target = (workdir / dest).resolve()
        target.mkdir(parents=True, exist_ok=True)
        _copy_context(sources, target, patterns)

    # `python` of the base image: this interpreter's base (not the dev venv's).
    bin_dir = root / "host-bin"
    bin_dir.mkdir()
    base_python = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    (bin_dir / "python").symlink_to(base_python)
    env = _clean_env()
    # The builder's ENV, less PIP_NO_CACHE_DIR: here pip may reuse its cache to stay fast.
    env.update({k: v for k, v in builder.env().items() if k != "PIP_NO_CACHE_DIR"})
    env["PATH"] = f"{bin_dir}{os.pathsep}{_host_path_without_dev_venv()}"

    for run in builder.all("RUN"):
        command = run.args.replace(venv_in_image, str(venv))
        done = subprocess.run(
            ["bash", "-ec", command],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"RUN {command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"

    # The final stage has the virtualenv and nothing of the sources.
    shutil.rmtree(workdir)
    (root / final.last("WORKDIR").args.lstrip("/")).mkdir(parents=True)


def _image_at(stages: list[Stage], root: Path) -> Installed:
    """The final stage's view of the image installed under ``root``."""
    _builder, final = stages
    venv_in_image = copy_parts(final.all("COPY")[0])[2]
    venv = root / venv_in_image.lstrip("/")
    home = root / final.last("WORKDIR").args.lstrip("/")
    runtime = _clean_env()
    for key, declared in final.env().items():
        # e.g. MPLCONFIGDIR: under the pod's /tmp emptyDir, here under the scratch root.
        value = f"{root}{declared}" if declared.startswith("/tmp/") else declared
        value = value.replace("$PATH", _host_path_without_dev_venv())
        runtime[key] = value.replace(venv_in_image, str(venv))
    runtime["HOME"] = str(home)
    entrypoint = final.last("ENTRYPOINT").json_args()
    assert shutil.which(entrypoint[0], path=runtime["PATH"]) == str(venv / "bin" / entrypoint[0])
    return Installed(venv, runtime, home, entrypoint, final.last("CMD").json_args())


@pytest.mark.dockerfile
def test_installed_henge_answers_help(installed: Installed) -> None:
    done = installed.henge("--help")
    assert done.returncode == 0, done.stderr
    assert "serve" in done.stdout and "migrate" in done.stdout


@pytest.mark.dockerfile
def test_installed_package_carries_the_migrations(installed: Installed) -> None:
    python = installed.venv / "bin" / "python"
    done = subprocess.run(
        [str(python), "-c", "import scheduler, sys; print(scheduler.__file__)"],
        cwd=installed.workdir,
        env=installed.env,
        capture_output=True,
        text=True,
        check=True,
    )
    package = Path(done.stdout.strip()).parent
    assert package.is_relative_to(installed.venv), package
    shipped = package / "_migrations"
    assert (shipped / "env.py").is_file()
    revisions = {p.name for p in (REPO / "migrations" / "versions").glob("*.py")}
    assert revisions and revisions <= {p.name for p in (shipped / "versions").glob("*.py")}


@pytest.mark.dockerfile
def test_installed_image_carries_the_agent_without_pyspark(installed: Installed) -> None:
    """henge depends on henge-agent, installed from agent/; PySpark stays out of the image (the
    agent leaves it to the driver's environment)."""
    python = installed.venv / "bin" / "python"
    code = (
        "import importlib.metadata as m, importlib.util as u, henge_agent;"
        "print(henge_agent.__file__);"
        "print(m.version('henge-agent'));"
        "print(u.find_spec('pyspark') is None)"
    )
    done = subprocess.run(
        [str(python), "-c", code],
        cwd=installed.workdir,
        env=installed.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    location, version, no_pyspark = done.stdout.split()
    assert Path(location).is_relative_to(installed.venv), location
    declared = tomllib.loads((REPO / "agent" / "pyproject.toml").read_text())["project"]
    assert version == declared["version"]
    assert no_pyspark == "True"


@pytest.mark.dockerfile
def test_installed_henge_migrates_sqlite(installed: Installed, tmp_path: Path) -> None:
    from scheduler.registry.migrate import head_revision

    head = head_revision()
    database = tmp_path / "registry.db"
    env = {"HENGE_DATABASE_URL": f"sqlite:///{database}"}
    first = installed.henge("migrate", env=env)
    assert first.returncode == 0, first.stderr
    assert f"empty -> {head}" in first.stdout
    again = installed.henge("migrate", env=env)
    assert again.returncode == 0, again.stderr
    assert f"{head} -> {head}" in again.stdout
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(head,)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.dockerfile
def test_image_command_serves_until_ready(installed: Installed, tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'registry.db'}"
    assert installed.henge("migrate", env={"HENGE_DATABASE_URL": database}).returncode == 0
    port = _free_port()
    env = {
        **installed.env,
        "HENGE_DATABASE_URL": database,
        "HENGE_ADMIN_TOKEN": "dockerfile-check-token",
        "HENGE_PORT": str(port),
        "HENGE_SCHEDULER_ENABLED": "false",
    }
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [*installed.entrypoint, *installed.cmd],
        cwd=installed.workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        status = 0
        while time.monotonic() < deadline and process.poll() is None:
            try:
                status, _ = _get(f"{base}/readyz")
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                status = 0
            if status == 200:
                break
            time.sleep(0.3)
        output = (tmp_path / "serve.log").read_text()
        assert status == 200, f"/readyz never answered 200 (exit {process.poll()}):\n{output}"
        assert _get(f"{base}/healthz")[0] == 200
        code, metrics = _get(f"{base}/metrics")
        assert code == 200 and "henge_" in metrics
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        log.close()
