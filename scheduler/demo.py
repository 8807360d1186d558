"""``henge demo``: the real service on the embedded defaults, with synthetic agents.

It runs ``henge serve``'s own code path (API, loop, agent realizer) on a SQLite registry and a
static cluster, registers two tenants and three jobs, and feeds the API reports from small
synthetic streaming jobs whose speed follows the executors the scheduler gives them. Time runs
at real speed with short windows (2 s reports, 2 s rounds) so a minute shows the state machine
at work.
"""

from __future__ import annotations

import math
import secrets
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from rich.console import Console
from rich.table import Table

from scheduler.config import Settings
from scheduler.registry import migrate
from scheduler.service import build_service

SUB_WINDOW_S = 2.0


@dataclass
class SyntheticJob:
    """A micro-batch job: ``rate`` rows/s arrive; a row costs ``cost_s`` core-seconds."""

    tenant: str
    name: str
    priority: float
    slo: dict[str, Any]
    rate: float
    cost_s: float
    initial: int
    maximum: int
    trigger_s: float = 1.0
    overhead_s: float = 0.05
    backlog: float = 0.0
    executors: int = 0
    job_id: str = ""
    token: str = ""
    reports: int = field(default=0)

    def window(self, start: datetime, seconds: float) -> dict[str, Any]:
        """One report window, given the executors the job holds now."""
        arrived = self.rate * seconds
        capacity = self.executors / self.cost_s * seconds if self.executors else 0.0
        processed = min(arrived + self.backlog, capacity)
        self.backlog = arrived + self.backlog - processed
        busy_ms = processed * self.cost_s * 1000
        per_batch = self.rate * self.trigger_s * self.cost_s / max(self.executors, 1)
        wait = self.backlog / (capacity / seconds) if capacity else 60.0
        latency_s = self.trigger_s / 2 + self.overhead_s + per_batch + wait
        return {
            "window_start": start.isoformat(),
            "window_end": (start + timedelta(seconds=seconds)).isoformat(),
            "executors": self.executors,
            "cores_per_executor": 1,
            "busy_core_ms": busy_ms,
            "max_parallelism": 32,
            "sources": [
                {
                    "name": "events",
                    "arrived_rows": arrived,
                    "processed_rows": processed,
                    "backlog_rows": self.backlog,
                }
            ],
            "latency_ms": {"mean": latency_s * 1000},
        }


def demo_jobs() -> list[SyntheticJob]:
    return [
        SyntheticJob(
            "ads",
            "pageload",
            35,
            {"latency_ms": 1500},
            rate=2000,
            cost_s=0.002,
            initial=2,
            maximum=16,
        ),
        SyntheticJob(
            "search", "wordcount", 20, {"juice": 1.0}, rate=3000, cost_s=0.001, initial=1, maximum=8
        ),
        SyntheticJob(
            "ads", "clicks", 10, {"juice": 1.0}, rate=500, cost_s=0.001, initial=1, maximum=4
        ),
    ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def demo_settings(data_dir: Path, port: int) -> Settings:
    return Settings(
        database_url=f"sqlite:///{data_dir / 'henge-demo.db'}",
        admin_token=secrets.token_urlsafe(24),  # type: ignore[arg-type]
        host="127.0.0.1",
        port=port,
        policy="henge",
        policy_params={"quiesce_s": 4 * SUB_WINDOW_S, "round_interval_s": SUB_WINDOW_S},
        round_interval_s=SUB_WINDOW_S,
        sub_window_s=SUB_WINDOW_S,
        window_s=3 * SUB_WINDOW_S,
        stale_after_s=3 * SUB_WINDOW_S,
        recovery_observe_s=5 * SUB_WINDOW_S,
        static_nodes=2,
        static_cores_per_node=8,
        static_memory_mb_per_node=32768,
        log_level="warning",
        log_format="console",
    )  # type: ignore[call-arg]


def run_demo(
    seconds: float = 60.0,
    keep_serving: bool = False,
    console: Console | None = None,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    console = console or Console()
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="henge-demo-"))
    settings = demo_settings(data_dir, _free_port())
    migrate.upgrade(settings.database_url)
    service = build_service(settings)
    server = uvicorn.Server(
        uvicorn.Config(
            service.app, host=settings.host, port=settings.port, log_config=None, access_log=False
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://{settings.host}:{settings.port}"
    admin = {"Authorization": f"Bearer {settings.admin_token.get_secret_value()}"}  # type: ignore[union-attr]
    try:
        with httpx.Client(base_url=url, timeout=10) as http:
            _wait_ready(http)
            jobs = _register(http, admin, demo_jobs())
            console.print(
                f"Henge demo: API at {url}, registry {data_dir / 'henge-demo.db'}, "
                f"{len(jobs)} jobs from 2 tenants on 2 nodes x 8 cores"
            )
            background = service.start_background()
            try:
                _drive(http, admin, jobs, seconds, console)
            finally:
                background.shutdown(wait=True)
            summary = _summary(http, admin, jobs, console)
            if keep_serving:
                console.print(
                    f"Serving {url} until interrupted (admin token in {data_dir}/admin-token)"
                )
                (data_dir / "admin-token").write_text(settings.admin_token.get_secret_value())  # type: ignore[union-attr]
                (data_dir / "admin-token").chmod(0o600)
                thread.join()
            return summary
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        service.engine.dispose()


def _wait_ready(http: httpx.Client) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if http.get("/readyz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the demo server did not become ready")


def _register(
    http: httpx.Client, admin: dict[str, str], jobs: list[SyntheticJob]
) -> list[SyntheticJob]:
    tokens: dict[str, str] = {}
    for job in jobs:
        if job.tenant not in tokens:
            tokens[job.tenant] = (
                http.post("/v1/tenants", json={"name": job.tenant}, headers=admin)
                .raise_for_status()
                .json()["token"]
            )
        body = {
            "name": job.name,
            "priority": job.priority,
            "slo": job.slo,
            "executors": {"initial": job.initial, "min": 1, "max": job.maximum},
        }
        created = (
            http.post(
                "/v1/jobs", json=body, headers={"Authorization": f"Bearer {tokens[job.tenant]}"}
            )
            .raise_for_status()
            .json()
        )
        job.job_id, job.token = created["id"], created["agent_token"]
    return jobs


def _drive(
    http: httpx.Client,
    admin: dict[str, str],
    jobs: list[SyntheticJob],
    seconds: float,
    console: Console,
) -> None:
    """Post one window per job every sub-window and print each new round."""
    start = datetime.now(UTC)
    shown = 0
    steps = math.ceil(seconds / SUB_WINDOW_S)
    for step in range(steps):
        window_start = start + timedelta(seconds=step * SUB_WINDOW_S)
        for job in jobs:
            answer = http.post(
                f"/v1/jobs/{job.job_id}/reports",
                json=job.window(window_start, SUB_WINDOW_S),
                headers={"Authorization": f"Bearer {job.token}"},
            )
            answer.raise_for_status()
            job.executors = answer.json()["target_executors"]  # the agent obeys its target
        for r in reversed(http.get("/v1/rounds", params={"limit": 20}, headers=admin).json()):
            if r["number"] > shown:
                shown = r["number"]
                name = next((j.name for j in jobs if j.job_id == r["job_id"]), "-")
                console.print(
                    f"round {r['number']:>3}  {r['state']:<13} {r['action']:<11} "
                    f"{name:<10} utility {r['total_utility']:6.1f}/{r['max_utility']:<5.0f} "
                    f"{r['reason']}",
                    highlight=False,
                    overflow="fold",
                )
        time.sleep(
            max(
                0.0,
                (
                    start + timedelta(seconds=(step + 1) * SUB_WINDOW_S) - datetime.now(UTC)
                ).total_seconds(),
            )
        )


def _summary(
    http: httpx.Client, admin: dict[str, str], jobs: list[SyntheticJob], console: Console
) -> dict[str, Any]:
    listed = {j["id"]: j for j in http.get("/v1/jobs", headers=admin).json()}
    rounds = http.get("/v1/rounds", params={"limit": 10_000}, headers=admin).json()
    table = Table(title="Henge demo: where the jobs ended", title_justify="left")
    for column in ("job", "priority", "SLO", "executors", "utility", "status"):
        table.add_column(column)
    for job in jobs:
        info = listed[job.job_id]
        slo = ", ".join(f"{k} {v}" for k, v in job.slo.items())
        utility = info["utility"]
        table.add_row(
            job.name,
            f"{job.priority:g}",
            slo,
            str(info["executors"]["target"]),
            "-" if utility is None else f"{utility:.1f}",
            info["status"],
        )
    console.print(table)
    actions: dict[str, int] = {}
    for r in rounds:
        for action in r["actions"]:
            actions[action["kind"]] = actions.get(action["kind"], 0) + 1
    last = rounds[0] if rounds else None
    console.print(
        f"{len(rounds)} rounds, actions {actions or 'none'}; final total utility "
        f"{last['total_utility'] if last else 0:.1f} of {last['max_utility'] if last else 0:.0f} "
        f"(state {last['state'] if last else '-'})",
        highlight=False,
    )
    return {
        "rounds": len(rounds),
        "actions": actions,
        "total_utility": last["total_utility"] if last else 0.0,
        "max_utility": last["max_utility"] if last else 0.0,
        "jobs": {j.name: listed[j.job_id] for j in jobs},
    }
