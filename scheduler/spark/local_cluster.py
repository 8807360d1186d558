"""A Spark standalone master and worker(s) on loopback, from the installed PySpark.

    from scheduler.spark import local_cluster

    with local_cluster(worker_cores=4) as cluster:
        spark = SparkSession.builder.master(cluster.master_url).getOrCreate()

Each daemon is PySpark's own ``bin/spark-class org.apache.spark.deploy.master.Master`` (or
``...worker.Worker``) bound to 127.0.0.1, started in a session of its own, with its log, work
and configuration directories in a temporary directory. Stopping signals exactly the process
groups it started (the worker's executors are in the worker's group), never anything found by
name. ``python -m scheduler.spark start`` leaves the cluster running and records it in a state
file; ``python -m scheduler.spark stop`` reads that file back and stops those processes only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
MARKER_PROPERTY = "henge.localcluster"
START_TIMEOUT_S = 90.0
STOP_GRACE_S = 15.0
LOG_TAIL_CHARS = 3000


class LocalClusterError(RuntimeError):
    """The cluster could not start (no Java, no PySpark, a daemon died); carries log tails."""


def spark_home() -> Path:
    """The Spark distribution inside the installed PySpark package."""
    try:
        from pyspark.find_spark_home import _find_spark_home
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise LocalClusterError(
            "PySpark is not installed: pip install -e '.[spark]' (pyspark==4.3.0)"
        ) from exc
    home = Path(_find_spark_home())
    if not (home / "bin" / "spark-class").exists():
        raise LocalClusterError(f"no bin/spark-class under SPARK_HOME={home}")
    return home


def inherited_environment() -> dict[str, str]:
    """The environment the Spark daemons start from: this process's, handed through to them
    (Spark's launch scripts read ``JAVA_HOME``, ``PATH`` and ``SPARK_*`` there)."""
    return dict(os.environ)


def java_available(env: Mapping[str, str] | None = None) -> str | None:
    """Why Java cannot run, or None when it can: the ``java`` Spark's launch scripts pick in the
    daemons' environment ``env`` (default :func:`inherited_environment`), ``$JAVA_HOME/bin/java``
    or else ``java`` on its ``PATH``."""
    env = inherited_environment() if env is None else env
    java_home = env.get("JAVA_HOME")
    java = (
        str(Path(java_home) / "bin" / "java")
        if java_home
        else shutil.which("java", path=env.get("PATH"))
    )
    if not java or not Path(java).exists():
        return "no Java runtime found (install Java 17 or 21, or set JAVA_HOME)"
    try:
        subprocess.run([java, "-version"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`{java} -version` failed: {exc}"
    return None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _tail(path: Path) -> str:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return "(no log)"
    return text if len(text) <= LOG_TAIL_CHARS else "..." + text[-LOG_TAIL_CHARS:]


def _get_json(url: str, timeout: float = 2.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read().decode())


@dataclass
class Daemon:
    role: str
    pid: int
    log: str


@dataclass
class LocalCluster:
    """A standalone master and ``workers`` workers of ``worker_cores`` cores each on loopback."""

    workers: int = 1
    worker_cores: int = 4
    worker_memory: str = "4g"
    host: str = "127.0.0.1"
    base_dir: str | None = None
    """Logs, work and conf directories; a new temporary directory when not given."""
    master_port: int = 0
    master_ui_port: int = 0
    daemons: list[Daemon] = field(default_factory=list)
    owns_dir: bool = False

    def __post_init__(self) -> None:
        self._popen: dict[int, subprocess.Popen[bytes]] = {}

    # ---- addresses --------------------------------------------------------------------------

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.master_port}"

    @property
    def master_ui_url(self) -> str:
        return f"http://{self.host}:{self.master_ui_port}"

    @property
    def log_dir(self) -> Path:
        assert self.base_dir is not None
        return Path(self.base_dir) / "logs"

    def status(self) -> dict:
        """The master's JSON status (workers, cores, cores used, applications)."""
        return _get_json(f"{self.master_ui_url}/json/")

    def alive_workers(self) -> list[dict]:
        try:
            return [w for w in self.status().get("workers", []) if w.get("state") == "ALIVE"]
        except (OSError, ValueError):
            return []

    def executor_pids(self, app_name: str) -> list[int]:
        """Process ids of the executors the running application ``app_name`` holds on this
        cluster's workers (Linux: read from ``/proc``), to kill one in a fault test."""
        apps = [a["id"] for a in self.status().get("activeapps", []) if a.get("name") == app_name]
        if not apps:
            return []
        marker = f"--app-id\0{apps[0]}\0".encode()
        pids = []
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue  # gone meanwhile
            if b"CoarseGrainedExecutorBackend" in cmdline and marker in cmdline + b"\0":
                pids.append(int(entry.name))
        return sorted(pids)

    # ---- start and stop ---------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        assert self.base_dir is not None
        base = Path(self.base_dir)
        env = {
            **inherited_environment(),
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": self.host,
            "SPARK_MASTER_HOST": self.host,
            "SPARK_CONF_DIR": str(base / "conf"),
            "SPARK_LOG_DIR": str(self.log_dir),
            "SPARK_WORKER_DIR": str(base / "work"),
            "SPARK_DAEMON_JAVA_OPTS": f"-D{MARKER_PROPERTY}={base}",
        }
        # Executors start Python workers with the driver's PYSPARK_PYTHON; this is the fallback
        # for drivers that do not set it (an inherited PYSPARK_PYTHON is handed through).
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.pop("SPARK_MASTER_OPTS", None)
        env.pop("SPARK_WORKER_OPTS", None)
        return env

    def _launch(self, role: str, args: list[str]) -> Daemon:
        log = self.log_dir / f"{role}.log"
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                env=self._env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped as one, nothing else
            )
        daemon = Daemon(role, process.pid, str(log))
        self.daemons.append(daemon)
        self._popen[process.pid] = process
        return daemon

    def start(self, timeout_s: float = START_TIMEOUT_S) -> LocalCluster:
        problem = java_available(inherited_environment())
        if problem:
            raise LocalClusterError(problem)
        spark_home()
        if self.base_dir is None:
            self.base_dir = tempfile.mkdtemp(prefix="henge-spark-")
            self.owns_dir = True
        base = Path(self.base_dir)
        for sub in ("logs", "work", "conf"):
            (base / sub).mkdir(parents=True, exist_ok=True)
        self.master_port = self.master_port or free_port(self.host)
        self.master_ui_port = self.master_ui_port or free_port(self.host)
        deadline = time.monotonic() + timeout_s
        try:
            self._launch(
                "master",
                [
                    MASTER_CLASS,
                    "--host", self.host,
                    "--port", str(self.master_port),
                    "--webui-port", str(self.master_ui_port),
                ],
            )  # fmt: skip
            self._wait(lambda: self.status().get("status") == "ALIVE", "master", deadline)
            for i in range(self.workers):
                self._launch(
                    f"worker-{i}",
                    [
                        WORKER_CLASS, self.master_url,
                        "--host", self.host,
                        "--cores", str(self.worker_cores),
                        "--memory", self.worker_memory,
                        "--webui-port", str(free_port(self.host)),
                        "--work-dir", str(base / "work"),
                    ],
                )  # fmt: skip
            self._wait(lambda: len(self.alive_workers()) >= self.workers, "workers", deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self, ready: object, what: str, deadline: float) -> None:
        last = ""
        while True:
            for daemon in self.daemons:
                process = self._popen.get(daemon.pid)
                if process is not None and process.poll() is not None:
                    raise LocalClusterError(
                        f"the Spark {daemon.role} exited with code {process.returncode}; "
                        f"log {daemon.log}:\n{_tail(Path(daemon.log))}"
                    )
            try:
                if ready():  # type: ignore[operator]
                    return
            except (OSError, ValueError, urllib.error.URLError) as exc:
                last = f" (last: {exc})"
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {d.role}:\n{_tail(Path(d.log))}" for d in self.daemons)
                raise LocalClusterError(f"the Spark {what} did not come up in time{last}\n{logs}")
            time.sleep(0.25)

    def _ours(self, pid: int) -> bool:
        """The process is one we started: its command line carries our marker directory."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            # No /proc (macOS): trust the recorded pid only while it is alive.
            return _alive(pid) and sys.platform != "linux"
        return f"-D{MARKER_PROPERTY}={self.base_dir}" in cmdline

    def stop(self, grace_s: float = STOP_GRACE_S, remove_dir: bool | None = None) -> None:
        """Stop the workers (and their executors), then the master; only our process groups."""
        for daemon in sorted(self.daemons, key=lambda d: d.role == "master"):
            process = self._popen.get(daemon.pid)
            if process is not None:
                _stop_group(process.pid, lambda p=process: p.poll() is not None, grace_s)
            elif self._ours(daemon.pid):
                _stop_group(daemon.pid, lambda pid=daemon.pid: not _alive(pid), grace_s)
        self.daemons.clear()
        if (remove_dir if remove_dir is not None else self.owns_dir) and self.base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self if self.daemons else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- state file (for the command line) --------------------------------------------------

    def to_json(self) -> str:
        data = asdict(self)
        data["master_url"] = self.master_url
        data["master_ui_url"] = self.master_ui_url
        return json.dumps(data, indent=2)

    @classmethod
    def from_json(cls, text: str) -> LocalCluster:
        data = json.loads(text)
        data.pop("master_url", None)
        data.pop("master_ui_url", None)
        daemons = [Daemon(**d) for d in data.pop("daemons", [])]
        return cls(**data, daemons=daemons)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not alive for our purposes.
    with suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False
    return True


def _stop_group(pgid: int, gone: object, grace_s: float) -> None:
    """SIGTERM the process group ``pgid`` (the daemon and its children), SIGKILL after grace."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if gone():  # type: ignore[operator]
                break
            time.sleep(0.1)
        if gone() and not _group_alive(pgid):  # type: ignore[operator]
            return


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def local_cluster(
    workers: int = 1, worker_cores: int = 4, worker_memory: str = "4g", **kwargs: object
) -> Iterator[LocalCluster]:
    """A started :class:`LocalCluster`, stopped (and its temporary directory removed) on exit."""
    cluster = LocalCluster(
        workers=workers, worker_cores=worker_cores, worker_memory=worker_memory, **kwargs
    )  # type: ignore[arg-type]
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
