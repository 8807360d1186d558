"""``henge serve`` with several server processes (``HENGE_WORKERS``) on one listening socket.

One process holds the API to one core's worth of Python; report ingestion needs more. The
supervisor claims the port, makes a directory for the processes' shared metrics, and starts
the workers (fresh interpreters, as uvicorn's own workers are). Every worker serves the API on
the port; worker 0 alone also runs the rounds and the background work (the history's roll-up,
the forecasts' fit, the purge), so a registry without leader election (SQLite) still gets one
round at a time. When a worker exits, the supervisor stops the others and exits with an error:
the service runs whole or not at all, and its own supervisor (Kubernetes) restarts it.
"""

from __future__ import annotations

import multiprocessing
import signal
import socket
import tempfile
from collections.abc import Sequence
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import FrameType

import structlog

from scheduler.config import Settings

log = structlog.get_logger("henge.workers")

LISTEN_BACKLOG = 2048
STOP_GRACE_S = 15.0
"""How long a worker has to finish its requests (and its round) once told to stop."""


class WorkerExited(RuntimeError):
    """A worker ended while the service was meant to run."""


def serve_workers(settings: Settings) -> None:
    """Run ``settings.workers`` server processes until interrupted or until one of them ends
    (then raise :class:`WorkerExited`)."""
    claim = _reuse_port_socket(settings.host, settings.port)  # the port is taken, or fails now
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="henge-metrics-") as shared:
        processes = [
            context.Process(
                target=run_worker,
                args=(settings, index, Path(shared)),
                name=f"henge-worker-{index}",
            )
            for index in range(settings.workers)
        ]
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            stopping = True
            for process in processes:
                if process.is_alive():
                    process.terminate()

        previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            for process in processes:
                process.start()
            log.info("workers.started", workers=len(processes), port=settings.port)
            ended = wait([p.sentinel for p in processes])
            first = next(p for p in processes if p.sentinel in ended)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            _stop_all(processes)
            claim.close()
    if not stopping:
        raise WorkerExited(f"{first.name} exited with code {first.exitcode}; stopped the others")
    log.info("workers.stopped")


def run_worker(settings: Settings, index: int, shared: Path) -> None:
    """One worker: the service on a listening socket of its own on the service's port, its
    metrics in ``shared``."""
    from scheduler.logs import configure_logging
    from scheduler.prometheus import ServiceMetrics, share_metrics_directory
    from scheduler.service import build_service, run_until_stopped

    configure_logging(settings.log_level, settings.log_format, worker=index)
    share_metrics_directory(shared)
    leads = index == 0
    own = settings if leads else settings.model_copy(update={"scheduler_enabled": False})
    service = build_service(own, metrics=ServiceMetrics(shared))
    listener = _reuse_port_socket(settings.host, settings.port)
    listener.listen(LISTEN_BACKLOG)
    run_until_stopped(service, [listener], background=leads)


def _reuse_port_socket(host: str, port: int) -> socket.socket:
    """A socket bound to the service's address that other processes may bind too: each
    worker listens on one of its own and the kernel spreads new connections over them evenly.
    (One socket shared by all would not: the worker that wakes first accepts every connection
    waiting, and agents keep their connections.) The supervisor binds one without listening,
    which holds the port and receives nothing."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def _stop_all(processes: Sequence[BaseProcess]) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()  # SIGTERM: uvicorn finishes its requests, the service its round
    for process in processes:
        process.join(STOP_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()
