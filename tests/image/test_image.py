"""The container image, really built from the Dockerfile and run.

scripts/ensure-image.sh builds it with buildah (no Docker engine runs here; it installs buildah
and debootstrap from Debian when they are missing and makes a bookworm base with Python 3.11 in
place of python:3.11-slim-bookworm, once per machine): a minute or so, two to four more the
first time on a machine. Each test then runs the image in a buildah working container, as its
non-root user (uid 10001), with chroot isolation on the host's network, so the service in the
container reaches the tests' Postgres at 127.0.0.1:5432 and the tests reach the service on a
loopback port:

- the build reports its time, the image's size and its largest packages;
- the image's configuration is the Dockerfile's (entrypoint, command, user, port, environment),
  and it holds the virtualenv only: no sources, no PySpark, no stale compiled core;
- `henge migrate` creates the schema in a fresh database, then finds nothing to do;
- `henge serve`, started by the image's ENTRYPOINT and CMD, answers /readyz; a tenant and a job
  are registered with `henge` commands run in the image; a scheduling round admits the job
  (`henge rounds`, `henge job show`); /metrics answers Prometheus text; on SIGTERM the server
  shuts down cleanly, and its container is removed;
- the Helm chart, rendered with this image's reference, runs it in its Deployment and its
  migrations Job, as the image's user and on the image's port.

When the image cannot be built (no root, no buildah, no network to Debian or PyPI) the tests fail
with the script's output: nothing here is skipped. HENGE_TEST_IMAGE names the image (default
localhost/henge:test). Under `make test` the build is started before the linters and the tests
take its outcome (HENGE_IMAGE_BUILD_LOG names its output); run alone, they build the image.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from scheduler.registry.migrate import head_revision
from tests.conftest import _libpq, create_database, drop_database
from tests.helm.conftest import Helm, helm_env, obtain_helm
from tests.image.dockerfile import parse_dockerfile
from tests.serving import PAGELOAD, free_port

pytestmark = [pytest.mark.image, pytest.mark.postgres]

REPO = Path(__file__).resolve().parents[2]
ENSURE_IMAGE = REPO / "scripts" / "ensure-image.sh"
IMAGE = os.environ.get("HENGE_TEST_IMAGE", "localhost/henge:test")
UID = 10001
USER = f"{UID}:{UID}"
ADMIN_TOKEN = "image-test-admin-token-0123456789"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
BUILD_TIMEOUT_S = 1800
READY_TIMEOUT_S = 90
# chroot isolation: no OCI runtime needed, and the container shares the host's network and PIDs.
BUILDAH_ENV = {**os.environ, "BUILDAH_ISOLATION": "chroot"}


# ---- the image -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Image:
    reference: str
    config: dict[str, Any]
    build_log: Path


def _buildah(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["buildah", *args],
        env=BUILDAH_ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _checked(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (
        f"{' '.join(map(str, done.args))} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


def _await(early: Path, log: Path) -> str | None:
    """Waits for the build `make test` started before the linters (its output in ``early``,
    its exit code in the ``.status`` file beside it), copies its output to ``log``; why it
    failed, or None."""
    status = early.with_name(early.name + ".status")
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while not status.exists():
        if time.monotonic() > deadline:
            return f"the build started by make test took over {BUILD_TIMEOUT_S} s: {early}"
        time.sleep(1)
    log.write_text(early.read_text(errors="replace"))
    code = status.read_text().strip()
    if code != "0":
        tail = "\n".join(log.read_text().splitlines()[-40:])
        return f"{ENSURE_IMAGE.name}, started by make test, exited {code}:\n{tail}"
    return None


def _build(log: Path) -> str | None:
    """Runs the script, its output to ``log``; why it failed, or None."""
    with log.open("w") as out:
        try:
            done = subprocess.run(
                ["bash", str(ENSURE_IMAGE), IMAGE],
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"{ENSURE_IMAGE.name} took over {BUILD_TIMEOUT_S} s; its output: {log}"
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        return f"{ENSURE_IMAGE.name} exited {done.returncode}:\n{tail}"
    return None


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    """The image, built from the working tree once per test run, however many pytest workers
    use it (the workers share the parent of their temporary folders; a failed build is not
    tried again by each of them)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER") is not None:
        shared = shared.parent
    log = shared / "built-image.log"
    outcome = shared / "built-image.outcome"
    with (shared / "built-image.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # (the other workers wait for the build)
        if not outcome.exists():
            early = os.environ.get("HENGE_IMAGE_BUILD_LOG")
            outcome.write_text((_await(Path(early), log) if early else _build(log)) or "built")
    if outcome.read_text() != "built":
        pytest.fail(f"the image could not be built: {outcome.read_text()}", pytrace=False)
    inspected = json.loads(_checked(_buildah("inspect", "--type", "image", IMAGE)))
    return Image(IMAGE, inspected["OCIv1"]["config"], log)


# ---- working containers ----------------------------------------------------------------------


@dataclass
class Container:
    """A buildah working container of the image; commands run in it as ``user`` (None: as the
    image's USER)."""

    name: str
    config: dict[str, Any]
    user: str | None = USER
    env: dict[str, str] = field(default_factory=dict)

    def argv(self, *command: str, env: dict[str, str] | None = None) -> list[str]:
        options = ["--isolation", "chroot", "--network", "host"]
        if self.user is not None:
            options += ["--user", self.user]
        for key, value in {**self.env, **(env or {})}.items():
            options += ["--env", f"{key}={value}"]
        return ["buildah", "run", *options, self.name, "--", *command]

    def run(
        self, *command: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*command, env=env),
            env=BUILDAH_ENV,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def henge(self, *args: str, env: dict[str, str] | None = None) -> str:
        """``henge ARGS`` through the image's entrypoint; its stdout, asserting exit 0."""
        return _checked(self.run(*self.config["Entrypoint"], *args, env=env))

    def henge_json(self, *args: str) -> Any:
        return json.loads(self.henge(*args, "--json"))

    def put(self, text: str, path: str) -> None:
        """A file at ``path`` in the container, owned by the image's user."""
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
            handle.write(text)
        try:
            owner = self.user or self.config["User"]
            _checked(_buildah("copy", "--chown", owner, self.name, handle.name, path))
        finally:
            os.unlink(handle.name)

    def listed(self) -> bool:
        names = _checked(_buildah("containers", "--format", "{{.ContainerName}}")).split()
        return self.name in names


MakeContainer = Callable[..., Container]


@pytest.fixture(scope="session")
def containers(image: Image) -> Iterator[MakeContainer]:
    """Makes working containers of the image; all are removed at the end of the session."""
    made: list[str] = []

    def make(**kwargs: Any) -> Container:
        name = f"henge-test-{uuid.uuid4().hex[:12]}"
        _checked(_buildah("from", "--pull=never", "--name", name, image.reference))
        made.append(name)
        return Container(name, image.config, **kwargs)

    yield make
    for name in made:
        _buildah("rm", name)


# ---- a server in the image -------------------------------------------------------------------


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    server: Container
    cli: Container

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


def _server_pid(launcher: int, uid: int) -> int | None:
    """The ``henge serve`` process among the launcher's descendants: chroot isolation runs it in
    the host's PID namespace, under buildah's helpers: buildah-chroot-runtime, then
    buildah-chroot-exec, which has the same arguments and already runs as ``uid``."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        pid, ppid = int(stat.parent.name), int(text.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(pid)
    pending, found = [launcher], []
    while pending:
        children = parents.get(pending.pop(), [])
        found += children
        pending += children
    for pid in found:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        real_uid = int(next(ln for ln in status.splitlines() if ln.startswith("Uid:")).split()[1])
        helper = argv[0].startswith(b"buildah")
        if real_uid == uid and not helper and b"serve" in argv:
            return pid
    return None


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    last = "no answer yet"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"henge serve exited {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            answer = httpx.get(f"{url}/readyz", timeout=2)
            if answer.status_code == 200:
                return
            last = f"HTTP {answer.status_code} {answer.text[:200]}"
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.3)
    pytest.fail(f"/readyz not ready after {READY_TIMEOUT_S} s ({last}):\n{log.read_text()[-4000:]}")


def _stop(served: Served) -> int | None:
    """SIGTERM to the server process itself (buildah answers a signal by killing its command
    with SIGKILL), then wait for the container's command to end. The server's pid, or None when
    it had already gone."""
    pid = _server_pid(served.process.pid, UID)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
    try:
        served.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        served.process.kill()
        served.process.wait(timeout=10)
    return pid


@contextmanager
def _serve(
    containers: MakeContainer, database_url: str, log_path: Path, env: dict[str, str]
) -> Iterator[Served]:
    """The image's ENTRYPOINT + CMD (``henge serve --host 0.0.0.0``) in a container of its own
    on a free port, after ``henge migrate``; ``henge`` commands for it run in another one."""
    server = containers()
    server.henge("migrate", env={"HENGE_DATABASE_URL": database_url})
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # (a wide terminal, so that tables do not fold ids over two lines)
    cli = containers(env={"HENGE_URL": url, "COLUMNS": "250"})
    command = [*server.config["Entrypoint"], *server.config["Cmd"]]
    server_env = {
        "HENGE_DATABASE_URL": database_url,
        "HENGE_ADMIN_TOKEN": ADMIN_TOKEN,
        "HENGE_PORT": str(port),
        **env,
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            server.argv(*command, env=server_env),
            env=BUILDAH_ENV,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    served = Served(url, process, log_path, server, cli)
    try:
        _wait_ready(url, process, log_path)
        yield served
    finally:
        _stop(served)


# A round every 0.3 s with a policy that admits a job at once (the Henge policy waits for reports).
ROUNDS = {"HENGE_POLICY": "static", "HENGE_ROUND_INTERVAL_S": "0.3"}


@pytest.fixture(scope="module")
def served(
    containers: MakeContainer, pg_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    database_url = create_database(pg_server, prefix="henge_image")
    try:
        log = tmp_path_factory.mktemp("served") / "serve.log"
        with _serve(containers, database_url, log, ROUNDS) as served:
            yield served
    finally:
        drop_database(pg_server, database_url)


def _tenant(served: Served) -> dict[str, Any]:
    name = f"ops-{uuid.uuid4().hex[:8]}"
    created = served.cli.henge_json("tenant", "create", name, "--token", ADMIN_TOKEN)
    assert created["name"] == name and re.fullmatch(UUID, created["id"]), created
    assert created["token"].startswith("hgt_"), created
    return dict(created)


def _register(served: Served, tenant: dict[str, Any], spec: dict[str, Any]) -> str:
    """``henge job register`` in the image; its printed output."""
    path = f"/home/henge/{spec['name']}.yaml"
    served.cli.put(yaml.safe_dump(spec), path)
    return served.cli.henge("job", "register", "--file", path, "--token", tenant["token"])


# ---- the image as built ----------------------------------------------------------------------


def test_image_config_is_the_dockerfiles(image: Image) -> None:
    final = parse_dockerfile()[-1]
    config = image.config
    assert config["Entrypoint"] == final.last("ENTRYPOINT").json_args() == ["henge"]
    assert config["Cmd"] == final.last("CMD").json_args()
    assert config["User"] == final.last("USER").args == USER
    assert set(config["ExposedPorts"]) == {f"{final.last('EXPOSE').args}/tcp"}
    assert config["WorkingDir"] == final.last("WORKDIR").args
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["PATH"].startswith("/opt/henge/bin:")
    for key, value in final.env().items():
        if key != "PATH":
            assert env[key] == value, key


def test_build_reports_its_time_size_and_largest_packages(
    image: Image, containers: MakeContainer
) -> None:
    report = image.build_log.read_text()
    assert re.search(rf"^image: {re.escape(image.reference)}$", report, re.M), report
    assert re.search(r"^build: \d+ s$", report, re.M), report
    assert re.search(r"^size: \d+(\.\d+)? [kMG]B \(buildah images\)", report, re.M), report
    assert re.search(r"^virtualenv /opt/henge: \d", report, re.M), report
    listed = re.findall(r"^ +(\d+\.\d) MiB  (\S+)$", report, re.M)
    sizes = [float(size) for size, _ in listed]
    assert 5 <= len(listed) <= 15 and sizes == sorted(sizes, reverse=True), report
    # The breakdown is of this image's virtualenv.
    code = (
        "import json, os, sysconfig; print(json.dumps(os.listdir(sysconfig.get_path('purelib'))))"
    )
    installed = json.loads(_checked(containers().run("/opt/henge/bin/python", "-c", code)))
    assert {name for _, name in listed} <= set(installed), (listed, installed)


def test_image_runs_as_its_user_and_holds_only_the_virtualenv(
    image: Image, containers: MakeContainer
) -> None:
    container = containers()
    assert _checked(container.run("sh", "-c", "id -u; id -g")).split() == [str(UID)] * 2
    # The image's own USER applies when none is given, as under Kubernetes.
    as_configured = containers(user=None)
    names = _checked(as_configured.run("sh", "-c", "id -un; id -gn")).split()
    assert names == ["henge", "henge"]

    # The user cannot change the installed code; the builder's sources stayed behind.
    assert container.run("test", "-w", "/opt/henge/bin").returncode != 0
    assert container.run("test", "-e", "/src").returncode != 0
    code = (
        "import json, shutil, scheduler, henge_agent, importlib.util as u, scheduler.kube.client;"
        "from scheduler.compiled import COMPILED_MODULES, build_problems, compiled_modules;"
        "print(json.dumps([scheduler.__file__, henge_agent.__file__, build_problems(),"
        " compiled_modules() == list(COMPILED_MODULES),"
        " [m for m in ('pyspark', 'matplotlib', 'pip') if u.find_spec(m) is not None]"
        " + [t for t in ('gcc', 'cc') if shutil.which(t)]]))"
    )
    scheduler_file, agent_file, problems, compiled, extras = json.loads(
        _checked(container.run("python", "-c", code))
    )
    assert scheduler_file.startswith("/opt/henge/lib/python3.11/site-packages/scheduler/")
    assert agent_file.startswith("/opt/henge/lib/python3.11/site-packages/henge_agent/")
    # The core runs compiled, as in a development checkout (the builder compiles it), and the
    # build is whole and current; the Kubernetes wrapper imports without the client's asyncio
    # half; the server goes without PySpark, the plotting stack, pip and the builder's compiler.
    assert problems == [] and compiled, problems
    assert extras == []

    top = container.henge("--help")
    for command in ("serve", "migrate", "tenant", "job", "rounds"):
        assert re.search(rf"│ {command}\s", top), command


# ---- migrations ------------------------------------------------------------------------------


def test_migrate_creates_the_schema_in_a_fresh_database(
    containers: MakeContainer, fresh_pg_url: str
) -> None:
    container = containers()
    env = {"HENGE_DATABASE_URL": fresh_pg_url}
    head = head_revision()
    assert f"empty -> {head}" in container.henge("migrate", env=env)
    assert f"{head} -> {head}" in container.henge("migrate", env=env)
    with psycopg.connect(_libpq(fresh_pg_url)) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(head,)]
        tables = {row[0] for row in conn.execute("SELECT tablename FROM pg_tables")}
    assert {"tenants", "jobs", "rounds"} <= tables, tables


# ---- the service -----------------------------------------------------------------------------


def test_readyz_answers_ready(served: Served) -> None:
    answer = httpx.get(f"{served.url}/readyz", timeout=10)
    assert answer.status_code == 200
    assert answer.json() == {"status": "ready", "revision": head_revision()}
    assert httpx.get(f"{served.url}/healthz", timeout=10).status_code == 200


def test_tenant_and_job_registered_with_the_cli_in_the_image(served: Served) -> None:
    tenant = _tenant(served)
    listed = served.cli.henge_json("tenant", "list", "--token", ADMIN_TOKEN)
    assert {t["id"]: t["name"] for t in listed}[tenant["id"]] == tenant["name"]

    printed = _register(served, tenant, PAGELOAD)
    match = re.search(rf"job pageload registered: id ({UUID}), status queued", printed)
    assert match, printed
    assert re.search(r"agent token \(shown once.*\): hga_\S+", printed), printed

    jobs = served.cli.henge_json("job", "list", "--token", tenant["token"])
    assert [(j["id"], j["name"]) for j in jobs] == [(match.group(1), "pageload")]
    assert jobs[0]["priority"] == PAGELOAD["priority"]


def test_a_scheduling_round_admits_the_job(served: Served) -> None:
    tenant = _tenant(served)
    spec = {**PAGELOAD, "name": f"stream-{uuid.uuid4().hex[:6]}"}
    printed = _register(served, tenant, spec)
    match = re.search(rf"registered: id ({UUID})", printed)
    assert match, printed
    job_id = match.group(1)

    deadline = time.monotonic() + 30
    admits: list[dict[str, Any]] = []
    while not admits and time.monotonic() < deadline:
        rounds = served.cli.henge_json("rounds", "--limit", "50", "--token", ADMIN_TOKEN)
        admits = [
            r for r in rounds
            if r["action"] == "admit" and job_id in [a["job_id"] for a in r["actions"]]
        ]  # fmt: skip
        time.sleep(0.3)
    assert admits, f"no round admitted {job_id} in 30 s:\n{served.log_text()[-3000:]}"
    assert f"admitted {spec['name']}" in admits[0]["reason"]
    assert admits[0]["policy"] == "static"

    shown = served.cli.henge_json("job", "show", job_id, "--token", ADMIN_TOKEN)
    assert shown["status"] == "admitted"
    assert shown["executors"]["target"] == PAGELOAD["executors"]["initial"]


def test_metrics_answer_prometheus_text(served: Served) -> None:
    deadline = time.monotonic() + 30
    while True:
        answer = httpx.get(f"{served.url}/metrics", timeout=10)
        assert answer.status_code == 200
        totals: dict[str, float] = {}
        for family in text_string_to_metric_families(answer.text):
            for sample in family.samples:
                totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
        if totals.get("henge_rounds_total", 0) >= 1 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    # (the text exposition format; its version follows prometheus-client)
    assert answer.headers["content-type"].startswith("text/plain; version=")
    assert totals["henge_leader"] == 1  # the only replica holds the leader lock
    assert totals.get("henge_rounds_total", 0) >= 1, sorted(totals)
    assert totals["henge_round_duration_seconds_count"] >= 1


def test_server_stops_cleanly_and_its_container_is_removed(
    containers: MakeContainer, fresh_pg_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    with _serve(containers, fresh_pg_url, log, {"HENGE_SCHEDULER_ENABLED": "false"}) as served:
        assert httpx.get(f"{served.url}/readyz", timeout=10).status_code == 200
        pid = _stop(served)
    assert pid is not None, "no henge serve process under buildah run"
    assert not Path(f"/proc/{pid}").exists(), f"henge serve (pid {pid}) is still running"
    text = served.log_text()
    # uvicorn's graceful shutdown, to its last line.
    assert "Application shutdown complete" in text, text[-3000:]
    assert f"Finished server process [{pid}]" in text, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    # uvicorn ends by re-raising the SIGTERM it handled; buildah would say "killed" for SIGKILL.
    assert "exited on killed" not in text, text[-3000:]
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{served.url}/healthz", timeout=5)

    assert served.server.listed()
    _checked(_buildah("rm", served.server.name))
    assert not served.server.listed()


# ---- the Helm chart with this image ----------------------------------------------------------


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    try:
        binary = obtain_helm()
    except pytest.skip.Exception as exc:
        pytest.fail(f"helm is needed to render the chart with the image: {exc}", pytrace=False)
    return Helm(binary, helm_env(tmp_path_factory.mktemp("helm-home")))


@pytest.mark.helm
def test_chart_runs_the_built_image(image: Image, helm: Helm) -> None:
    repository, _, tag = image.reference.rpartition(":")
    assert repository and "/" not in tag, image.reference
    values = {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "database": {"url": "postgresql+psycopg://henge@postgres:5432/henge"},
    }
    objects = helm.render(values)
    workloads = {o["kind"]: o for o in objects if o["kind"] in {"Deployment", "Job"}}
    assert set(workloads) == {"Deployment", "Job"}, [o["kind"] for o in objects]

    uid, gid = (int(n) for n in image.config["User"].split(":"))
    port = int(next(iter(image.config["ExposedPorts"])).split("/")[0])
    for kind, workload in workloads.items():
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        assert container["image"] == image.reference, kind
        assert container["imagePullPolicy"] == "Never", kind
        # The chart relies on the image's ENTRYPOINT (henge) and user.
        assert "command" not in container, kind
        security = container["securityContext"]
        assert (security["runAsUser"], security["runAsGroup"]) == (uid, gid), kind
        assert security["runAsNonRoot"] is True, kind

    deployment = workloads["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert deployment["args"][0] == image.config["Cmd"][0] == "serve"
    assert [p["containerPort"] for p in deployment["ports"]] == [port]
    assert workloads["Job"]["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]
