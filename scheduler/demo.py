"""``henge demo``: the real service on the embedded defaults, on a simulated cluster.

It runs what ``henge serve`` runs (the FastAPI app on a SQLite registry, the scheduling loop
with the ``agent`` realizer) on the simulator's world instead of a real cluster, with a
virtual clock so that forty minutes of a multi-tenant scenario pass in well under a minute.
Tenants and jobs are registered and every report is posted through the HTTP API; each
simulated agent obeys the target the API answers with, as a real agent does.
"""

from __future__ import annotations

import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi.encoders import jsonable_encoder
from rich.console import Console
from rich.table import Table

from scheduler.config import Settings
from scheduler.realize.agent import AgentRealizer
from scheduler.registry import migrate
from scheduler.service import build_service
from scheduler.sim.plots import PLOTTING_EXTRA, plotting_available
from scheduler.sim.run import run_settings, write_outputs
from scheduler.sim.runner import Simulation, VirtualClock, WorldCluster
from scheduler.sim.scenario import Scenario
from scheduler.sim.scenario_file import load_scenario
from scheduler.sim.types import RoundSample, SimJobSpec, SimResult
from scheduler.sim.world import build_world

DEMO_SCENARIO = "demo"


@dataclass
class HttpFrontend:
    """Tenants, jobs and reports through the real API, as tenants and agents send them."""

    http: httpx.Client
    admin: dict[str, str]
    tenants: dict[str, str] = field(default_factory=dict)
    agents: dict[str, dict[str, str]] = field(default_factory=dict)

    def register(self, spec: SimJobSpec, at: datetime, running: bool) -> tuple[str, int]:
        if spec.tenant not in self.tenants:
            created = self.http.post("/v1/tenants", json={"name": spec.tenant}, headers=self.admin)
            self.tenants[spec.tenant] = created.raise_for_status().json()["token"]
        body = {
            "name": spec.name,
            "priority": spec.priority,
            "slo": dict(spec.slo),
            "executors": {
                "initial": spec.initial_executors,
                "min": spec.min_executors,
                "max": spec.max_executors,
                "cores": spec.cores_per_executor,
                "memory_mb": spec.memory_mb,
            },
        }
        tenant = {"Authorization": f"Bearer {self.tenants[spec.tenant]}"}
        job = self.http.post("/v1/jobs", json=body, headers=tenant).raise_for_status().json()
        self.agents[job["id"]] = {"Authorization": f"Bearer {job['agent_token']}"}
        return job["id"], job["executors"]["target"]

    def report(self, job_id: str, document: Mapping[str, Any], at: datetime) -> int | None:
        answer = self.http.post(
            f"/v1/jobs/{job_id}/reports",
            json=jsonable_encoder(document),  # the world's reports carry datetimes
            headers=self.agents[job_id],
        )
        return int(answer.raise_for_status().json()["target_executors"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def demo_settings(data_dir: Path, scenario: Scenario) -> Settings:
    return Settings(
        database_url=f"sqlite:///{data_dir / 'henge-demo.db'}",
        admin_token=secrets.token_urlsafe(24),  # type: ignore[arg-type]
        host="127.0.0.1",
        port=_free_port(),
        policy="henge",
        round_interval_s=scenario.sub_window_s,
        sub_window_s=scenario.sub_window_s,
        log_level="warning",
    )  # type: ignore[call-arg]


def run_demo(
    keep_serving: bool = False,
    console: Console | None = None,
    data_dir: Path | None = None,
    pace_s: float = 0.05,
    scenario_name: str = DEMO_SCENARIO,
) -> dict[str, Any]:
    """Run the demo scenario; return its summary (DESIGN §5.2 JSON) and where things are."""
    console = console or Console()
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix="henge-demo-"))
    scenario = load_scenario(scenario_name)
    world = build_world(scenario, scenario.seed)
    settings = demo_settings(data_dir, scenario)
    migrate.upgrade(settings.database_url)
    clock = VirtualClock(world.start)
    service = build_service(settings, cluster=WorldCluster(world), realizer=AgentRealizer(),
                            clock=clock)  # fmt: skip
    server = uvicorn.Server(uvicorn.Config(service.app, host=settings.host, port=settings.port,
                                           log_config=None, access_log=False))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://{settings.host}:{settings.port}"
    token = settings.admin_token.get_secret_value()  # type: ignore[union-attr]
    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            _wait_ready(http)
            console.print(
                f"Henge demo: scenario [bold]{scenario.name}[/] ({scenario.description.strip()})\n"
                f"API {url}, dashboard {url}/ui/, registry {data_dir / 'henge-demo.db'}, "
                f"policy henge; "
                f"{scenario.duration_s / 60:.0f} simulated minutes on a virtual clock",
                highlight=False,
            )
            frontend = HttpFrontend(http, {"Authorization": f"Bearer {token}"})
            simulation = Simulation(
                world, service.loop.core, run_settings(scenario), store=service.loop.store,
                frontend=frontend, clock=clock, loop=service.loop,
            )  # fmt: skip
            samples, actions = simulation.run(on_sample=lambda s: _show(console, s, pace_s))
            result = SimResult(
                scenario=scenario.name, policy="henge", seed=scenario.seed,
                policy_params=dict(service.loop.core.policy_params),
                sim_seconds=scenario.duration_s - scenario.scheduler_start_s,
                round_interval_s=scenario.sub_window_s, jobs=tuple(world.specs()),
                samples=tuple(samples), actions=tuple(actions),
                executor_core_seconds=simulation.core_seconds,
            )  # fmt: skip
            # (the figure needs the bench extra; the table below does not)
            plot = data_dir / "henge-demo.png" if plotting_available() else None
            summary = write_outputs(result, data_dir / "henge-demo.json", plot).summary
            _print_summary(console, summary, plot)
            if keep_serving:
                _serve_until_interrupted(console, url, data_dir, token)
            return {"summary": summary, "plot": plot, "data_dir": data_dir, "url": url}
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


def _show(console: Console, sample: RoundSample, pace_s: float) -> None:
    """One line per round that acted, and a heartbeat every five simulated minutes."""
    quiet = sample.action == "none" and int(sample.t_s) % 300 != 0
    if not quiet:
        console.print(
            f"t={sample.t_s / 60:5.1f} min  {sample.state:<13} {sample.action:<11} "
            f"{sample.job or '-':<10} "
            f"utility {sample.total_utility:6.1f}/{sample.max_utility:<4.0f} {sample.reason}",
            highlight=False,
            overflow="fold",
        )
        time.sleep(pace_s)


def _print_summary(console: Console, summary: dict[str, Any], plot: Path | None) -> None:
    table = Table(title="Henge demo: where the jobs ended", title_justify="left")
    for column in ("job", "priority", "mean utility / priority", "actions", "executors"):
        table.add_column(column)
    for job in summary["jobs"]:
        table.add_row(job["name"], f"{job['priority']:g}", f"{job['mean_utility_fraction']:.2f}",
                      str(job["actions"]), str(job["final_executors"]))  # fmt: skip
    console.print(table)
    slo = summary["slo_satisfaction"]
    ttm = summary["time_to_max_utility_s"]
    console.print(
        f"utility {summary['utility']['fraction']:.2f} of the maximum "
        f"(oracle fraction {summary['utility']['oracle_fraction']}), mean SLO satisfaction "
        f"{slo['mean']:.2f}, max utility first reached "
        f"{'never' if ttm is None else f'after {ttm / 60:.1f} min'}; "
        f"actions {summary['actions']}",
        highlight=False,
    )
    if plot is None:
        console.print(
            f"plot: not drawn, matplotlib is missing (the {PLOTTING_EXTRA!r} extra: "
            f"pip install 'henge[{PLOTTING_EXTRA}]')",
            highlight=False,
            markup=False,
        )
    else:
        console.print(f"plot: {plot}", highlight=False)


def _serve_until_interrupted(console: Console, url: str, data_dir: Path, token: str) -> None:
    token_file = data_dir / "admin-token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    console.print(
        f"Serving {url} until interrupted; the admin token is in {token_file}\n"
        f"Dashboard: {url}/ui/ (sign in with that token)",
        highlight=False,
    )
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        return
