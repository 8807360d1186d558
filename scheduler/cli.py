"""The ``henge`` command line: run the service, and talk to it as an admin or a tenant."""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from scheduler.api_client import ClientError, HengeClient, resolve_config
from scheduler.bench.server import DEFAULT_PG_SERVER
from scheduler.compiled import build_problems, problem_message

app = typer.Typer(
    name="henge",
    help="Henge for Spark: SLO-driven scheduling of Spark Structured Streaming jobs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
tenant_app = typer.Typer(help="Tenants (admin token).", no_args_is_help=True)
job_app = typer.Typer(
    help="Streaming jobs and their SLOs (tenant token; admin reads all).", no_args_is_help=True
)
bench_app = typer.Typer(
    help="Benchmarks. Without a subcommand: run scenarios × policies in the simulator and write "
    "a markdown table, every run's JSON and the plots into --out.",
    invoke_without_command=True,
)
app.add_typer(tenant_app, name="tenant")
app.add_typer(job_app, name="job")
forecast_app = typer.Typer(
    help="Input forecasts, fitted from each job's input history and read by every round.",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")
app.add_typer(forecast_app, name="forecast")

out = Console()
err = Console(stderr=True)

UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url", help="API URL \\[env HENGE_URL, config file; default http://127.0.0.1:8080]."
    ),
]
TokenOpt = Annotated[
    str | None, typer.Option("--token", help="Bearer token \\[env HENGE_TOKEN, config file].")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of tables.")]
FiguresFile = Annotated[Path | None, typer.Option("--json", help="Write the figures here.")]
ScratchServer = Annotated[
    str, typer.Option(help="Postgres server for a throw-away registry database.")
]


class CLIError(Exception):
    """A failure to report on one line."""


def _require_plotting(what: str) -> None:
    """Stop ``what`` at once, naming the extra to install, where matplotlib is missing."""
    from scheduler.sim.plots import PlottingUnavailable, require_plotting

    try:
        require_plotting(what)
    except PlottingUnavailable as exc:
        raise CLIError(str(exc)) from None


def _client(url: str | None, token: str | None) -> HengeClient:
    return HengeClient(resolve_config(url, token))


def _print_json(data: Any) -> None:
    out.print_json(json.dumps(data, default=str))


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")  # a narrow terminal wraps a name, never cuts it
    for row in rows:
        table.add_row(*["-" if v is None else _cell(v) for v in row])
    out.print(table)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


# ---- service ---------------------------------------------------------------------------------


@app.command()
def serve(
    host: Annotated[
        str | None, typer.Option(help="Listen address [HENGE_HOST, 127.0.0.1].")
    ] = None,
    port: Annotated[int | None, typer.Option(help="Listen port [HENGE_PORT, 8080].")] = None,
    database_url: Annotated[
        str | None, typer.Option(help="Registry URL [HENGE_DATABASE_URL].")
    ] = None,
    no_scheduler: Annotated[
        bool, typer.Option("--no-scheduler", help="Serve the API only; run no rounds.")
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=64,
            help="Server processes on the one port [HENGE_WORKERS, 1]. Each serves the API; "
            "the first also runs the rounds. More use more cores for agents' reports.",
        ),
    ] = None,
) -> None:
    """Run the HTTP API and the scheduling loop until interrupted."""
    from sqlalchemy.exc import OperationalError

    from scheduler.config import load_settings
    from scheduler.logs import configure_logging
    from scheduler.service import SchemaBehindError
    from scheduler.service import serve as run
    from scheduler.workers import WorkerExited, serve_workers

    settings = load_settings(
        host=host,
        port=port,
        database_url=database_url,
        scheduler_enabled=False if no_scheduler else None,
        workers=workers,
    )
    configure_logging(settings.log_level, settings.log_format)
    if settings.admin_token is None:
        raise CLIError(
            "set HENGE_ADMIN_TOKEN (the admin's bearer token) before starting the server"
        )
    try:
        if settings.workers > 1:
            serve_workers(settings)
        else:
            run(settings)
    except WorkerExited as exc:
        raise CLIError(str(exc)) from exc
    except SchemaBehindError as exc:
        raise CLIError(str(exc)) from exc
    except OperationalError as exc:
        raise CLIError(
            f"cannot reach the registry database: {str(exc.orig or exc).splitlines()[0]}"
        ) from exc


@app.command()
def migrate(
    database_url: Annotated[
        str | None, typer.Option(help="Registry URL [HENGE_DATABASE_URL].")
    ] = None,
    revision: Annotated[str, typer.Option(help="Target revision.")] = "head",
) -> None:
    """Create or upgrade the registry schema (Alembic migrations)."""
    from scheduler.config import load_settings
    from scheduler.logs import configure_logging
    from scheduler.registry import migrate as migrations
    from scheduler.registry.engine import make_engine

    settings = load_settings(database_url=database_url)
    configure_logging(settings.log_level, settings.log_format)
    engine = make_engine(settings.database_url, pool_size=1)
    try:
        before = migrations.current_revision(engine)
        migrations.upgrade(settings.database_url, revision)
        after = migrations.current_revision(engine)
    finally:
        engine.dispose()
    out.print(f"registry schema: {before or 'empty'} -> {after}")


# ---- forecasts -------------------------------------------------------------------------------


class FitEngine(StrEnum):
    local = "local"
    spark = "spark"


@forecast_app.command("fit")
def forecast_fit(
    database_url: Annotated[
        str | None, typer.Option(help="Registry URL [HENGE_DATABASE_URL].")
    ] = None,
    engine: Annotated[
        FitEngine,
        typer.Option(
            help="local: one fit after another in this process (what henge serve does every "
            "HENGE_FORECAST_INTERVAL_S); spark: every fit in one PySpark job, grouped by job "
            "(needs the spark extra and Java 17)."
        ),
    ] = FitEngine.local,
    master: Annotated[str, typer.Option(help="Spark master URL for --engine spark.")] = "local[*]",
) -> None:
    """Fit every registered job's input forecast from its input history (HENGE_HISTORY_DAYS of
    minutes) and store it; jobs with under an hour of history are left out."""
    from scheduler.clock import utc_now
    from scheduler.config import load_settings
    from scheduler.logs import configure_logging
    from scheduler.registry import forecasts
    from scheduler.registry.engine import make_engine, make_session_factory

    settings = load_settings(database_url=database_url)
    configure_logging(settings.log_level, settings.log_format)
    registry = make_engine(settings.database_url, pool_size=1)
    started = time.perf_counter()
    try:
        now = utc_now()
        with make_session_factory(registry)() as session, session.begin():
            job_ids = forecasts.forecast_jobs(session)
            days = settings.history_days
            if engine is FitEngine.spark:
                fitted = forecasts.fit_jobs_on_spark(session, job_ids, now, days, master)
            else:
                fitted = forecasts.fit_jobs(session, job_ids, now, days)
    finally:
        registry.dispose()
    seconds = time.perf_counter() - started
    out.print(f"fitted {len(fitted)} of {len(job_ids)} jobs' forecasts ({engine.value}) ", end="")
    out.print(f"in {seconds:.1f} s")


# ---- tenants ---------------------------------------------------------------------------------


@tenant_app.command("create")
def tenant_create(
    name: str, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False
) -> None:
    """Create a tenant and print its token (shown once)."""
    created = _client(url, token).post("/v1/tenants", {"name": name})
    if as_json:
        _print_json(created)
        return
    out.print(f"tenant [bold]{created['name']}[/] created, id {created['id']}")
    out.print(f"token (shown once, give it to the tenant): {created['token']}")


@tenant_app.command("list")
def tenant_list(url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """List tenants."""
    tenants = _client(url, token).get("/v1/tenants")
    if as_json:
        _print_json(tenants)
        return
    _table(
        "tenants",
        ["id", "name", "created"],
        [[t["id"], t["name"], t["created_at"]] for t in tenants],
    )


# ---- jobs ------------------------------------------------------------------------------------


def _load_job_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        body = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CLIError(f"{path} is not valid YAML: {str(exc).splitlines()[0]}") from exc
    if not isinstance(body, dict):
        raise CLIError(f"{path} must hold a job: a mapping with name, priority, slo, executors")
    return body


@job_app.command("register")
def job_register(
    file: Annotated[Path, typer.Option("--file", "-f", help="Job definition (YAML or JSON).")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Register a streaming job with its SLO; prints the agent token (shown once)."""
    created = _client(url, token).post("/v1/jobs", _load_job_file(file))
    if as_json:
        _print_json(created)
        return
    out.print(
        f"job [bold]{created['name']}[/] registered: id {created['id']}, "
        f"status {created['status']} ({created['status_reason']})"
    )
    out.print(
        "agent token (shown once; the job's agent reads it from HENGE_AGENT_TOKEN or "
        f"HENGE_AGENT_TOKEN_FILE, see docs/agent.md): {created['agent_token']}"
    )


def _slo_text(slo: dict[str, Any]) -> str:
    parts = []
    if slo.get("juice") is not None:
        parts.append(f"juice>={slo['juice']}")
    if slo.get("latency_ms") is not None:
        parts.append(f"{slo.get('latency_stat', 'mean')} latency<={slo['latency_ms']}ms")
    return ", ".join(parts)


@job_app.command("list")
def job_list(url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """List jobs (a tenant sees its own, the admin all)."""
    jobs = _client(url, token).get("/v1/jobs")
    if as_json:
        _print_json(jobs)
        return
    _table(
        "jobs",
        ["id", "name", "priority", "slo", "status", "executors", "utility", "juice", "latency ms"],
        [
            [
                j["id"],
                j["name"],
                j["priority"],
                _slo_text(j["slo"]),
                j["status"],
                j["executors"]["target"],
                j["utility"],
                j["juice"],
                j["latency_ms"],
            ]
            for j in jobs
        ],
    )


@job_app.command("show")
def job_show(
    job_id: str, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False
) -> None:
    """Show one job, with its input forecast: how it was fitted, its error against the
    seasonal-naive forecast (fitted, and on the input since) and whether it is trusted."""
    client = _client(url, token)
    job = client.get(f"/v1/jobs/{job_id}")
    forecast = client.request("GET", f"/v1/jobs/{job_id}/forecast", missing_ok=True)
    if as_json:
        _print_json({**job, "forecast": forecast})
        return
    ex = job["executors"]
    _table(
        f"job {job['name']}",
        ["field", "value"],
        [
            ["id", job["id"]],
            ["priority", job["priority"]],
            ["slo", _slo_text(job["slo"])],
            ["utility shape", job["slo"].get("utility", {}).get("shape", "knee")],
            [
                "status",
                f"{job['status']} ({job['status_reason']})"
                if job["status_reason"]
                else job["status"],
            ],
            [
                "executors",
                f"target {ex['target']} (min {ex['min']}, max {ex['max']}, "
                f"{ex['cores']} core(s), {ex['memory_mb']} MiB each)",
            ],
            ["utility", job["utility"]],
            ["juice", job["juice"]],
            ["latency ms", job["latency_ms"]],
            ["capacity", job["capacity"]],
            ["last report", job["last_report_at"]],
            ["actuator", job["actuator"]],
            ["forecast", _forecast_text(forecast)],
        ],
    )


def _forecast_text(forecast: dict[str, Any] | None) -> str:
    if forecast is None:
        return "none yet (fitted once the job has an hour of input history)"

    def ratio(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    trust = "trusted" if forecast["trusted"] else "not trusted: the reactive rules size the job"
    return (
        f"{forecast['method']}, fitted {forecast['fitted_at']}; error against seasonal-naive "
        f"{ratio(forecast['error'])} fitted, {ratio(forecast['recent_error'])} since; {trust}"
    )


@job_app.command("options")
def job_options(
    job_id: str, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False
) -> None:
    """What each executor count would give a job: predicted juice, latency (its SLO's
    statistic) and utility at its input now and at its forecast's peak, and core-hours a day.
    The smallest count that meets the SLO now is marked "now", the smallest that meets it at
    the peak too "peak". No numbers while the scheduler's model of the job is not trusted."""
    data = _client(url, token).get(f"/v1/jobs/{job_id}/options")
    if as_json:
        _print_json(data)
        return
    peak = data["peak"]
    out.print(f"model: {'trusted' if data['trusted'] else 'not trusted'} ({data['reason']})")
    rate = data["input_rate"]
    out.print(f"input now: {'-' if rate is None else f'{rate:,.0f} rows/s'}; " + _peak_text(peak))
    if not data["options"]:
        return
    columns = ["executors", "latency ms", "juice", "utility"]
    if peak is not None:
        columns += ["peak: latency ms", "peak: juice", "peak: utility"]
    columns += ["core-h/day", ""]
    rows = []
    for option in data["options"]:
        n, now, at_peak = option["executors"], option["now"], option["peak"]
        row = [n, now["latency_ms"], now["juice"], now["utility"]]
        if peak is not None:
            row += [at_peak["latency_ms"], at_peak["juice"], at_peak["utility"]]
        marks = [
            mark
            for mark, count in (("held", data["held"]), ("now", data["meets_now"]),
                                ("peak", data["meets_peak"]))
            if count == n
        ]  # fmt: skip
        rows.append([*row, option["core_hours_per_day"], ", ".join(marks)])
    _table(f"options of {job_id}", columns, rows)


@job_app.command("diagnosis")
def job_diagnosis(
    job_id: str, url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False
) -> None:
    """Why a job runs as it does, from its agent's task figures: a slow executor (and its
    node), a skewed stage (how uneven, and whether more executors can help), or neither; what
    the scheduler does about it; and the latest window's executors and stages."""
    data = _client(url, token).get(f"/v1/jobs/{job_id}/diagnosis")
    if as_json:
        _print_json(data)
        return
    finding = data["finding"]
    out.print(f"finding: {finding or 'none'}" + (f" ({data['reason']})" if data["reason"] else ""))
    out.print(f"{'acted on' if data['acted_on'] else 'not acted on'}: {data['note']}")
    if data["executors"]:
        rows = [
            [e["id"], e["host"] or "-", e["tasks"], e["mean_task_ms"], e["slowness"]]
            for e in data["executors"]
        ]
        columns = ["executor", "node", "tasks", "mean task ms", "x lower quartile"]
        _table(f"executors of {job_id} (latest window)", columns, rows)
    if data["stages"]:
        rows = [
            [s["name"], s["tasks"], s["median_task_ms"], s["max_task_ms"],
             s["largest_partition_share"], s["unevenness"], "yes" if s["bounds_stage"] else "no"]
            for s in data["stages"]
        ]  # fmt: skip
        columns = ["stage", "tasks", "median ms", "longest ms", "largest share", "uneven x",
                   "longest task bounds it"]  # fmt: skip
        _table(f"stages of {job_id} (latest window)", columns, rows)


def _peak_text(peak: dict[str, Any] | None) -> str:
    if peak is None:
        return "no forecast ahead"
    trust = "trusted" if peak["trusted"] else "not trusted"
    return f"forecast peak {peak['input_rate']:,.0f} rows/s at {peak['at']} ({trust})"


@job_app.command("history")
def job_history(
    job_id: str,
    since: Annotated[
        datetime | None, typer.Option(help="Windows ending after this time (UTC).")
    ] = None,
    until: Annotated[
        datetime | None, typer.Option(help="Windows ending at or before this time.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many windows (the newest).")] = 100,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A job's metric windows: utility, juice, latency, executors, rates."""
    data = _client(url, token).get(
        f"/v1/jobs/{job_id}/history",
        since=since.isoformat() if since else None,
        until=until.isoformat() if until else None,
        limit=limit,
    )
    if as_json:
        _print_json(data)
        return
    _table(
        f"history of {job_id}",
        [
            "window end",
            "executors",
            "utility",
            "juice",
            "latency ms",
            "capacity",
            "input/s",
            "processed/s",
        ],
        [
            [
                p["window_end"],
                p["executors"],
                p["utility"],
                p["juice"],
                p["latency_ms"],
                p["capacity"],
                p["input_rate"],
                p["processed_rate"],
            ]
            for p in data["points"]
        ],
    )


@job_app.command("remove")
def job_remove(job_id: str, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """Deregister a job."""
    _client(url, token).delete(f"/v1/jobs/{job_id}")
    out.print(f"job {job_id} removed")


# ---- rounds ----------------------------------------------------------------------------------


@app.command()
def rounds(
    since: Annotated[
        datetime | None, typer.Option(help="Rounds started at or after this time.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 20,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The scheduler's recent rounds: state, action, job, reason, utility (admin)."""
    data = _client(url, token).get(
        "/v1/rounds", since=since.isoformat() if since else None, limit=limit
    )
    if as_json:
        _print_json(data)
        return
    _table(
        "rounds",
        ["round", "started", "state", "action", "job", "reason", "utility"],
        [
            [
                r["number"],
                r["started_at"],
                r["state"],
                r["action"],
                r["job_id"],
                r["reason"],
                f"{r['total_utility']:.1f}/{r['max_utility']:.1f}",
            ]
            for r in data
        ],
    )


@app.command()
def capacity(
    horizon: Annotated[
        float,
        typer.Option(help="Seconds ahead to plan for (beyond a job's forecast, its input now)."),
    ] = 3600.0,
    without_nodes: Annotated[
        int, typer.Option(help="What if this many of the largest ready nodes were gone.")
    ] = 0,
    cores: Annotated[
        float | None, typer.Option(help="What if the cluster had this many cores.")
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The cores every admitted job's SLO needs over the horizon, per priority tier, from the
    scheduler's job models and input forecasts, against the cluster's cores (admin). With
    --without-nodes or --cores, against that what-if instead: the tiers and jobs that would
    miss their SLO, and by how many cores. Jobs are shared out as the scheduler would: every
    job keeps its minimum and higher priorities come first."""
    if without_nodes and cores is not None:
        _fail("give --without-nodes or --cores, not both")
    data = _client(url, token).get(
        "/v1/capacity", horizon=horizon, without_nodes=without_nodes or None, cores=cores
    )
    if as_json:
        _print_json(data)
        return
    out.print(
        f"cores: {data['cluster_cores']:g} in the cluster ({data['source']}), planned with "
        f"{data['capacity_cores']:g}; the jobs need {data['peak_cores']} at the most, at "
        f"{data['tightest_at']} (every {data['step_s']:g} s over {data['horizon_s']:g} s)"
    )
    rows = [
        [
            f"{t['priority']:g}",
            len(t["jobs"]),
            t["peak_cores"],
            t["short_cores"] or "fits",
            t["short_at"],
            ", ".join(t["missing"]) or None,
        ]
        for t in data["tiers"]
    ]
    columns = ["priority", "jobs", "peak cores", "short by (cores)", "at", "jobs that miss"]
    _table("needs per tier, highest priority first", columns, rows)
    dropped = data["first_dropped"]
    out.print(
        "every tier fits"
        if dropped is None
        else f"the first tier to give way: priority {dropped:g}"
    )
    for job in data["jobs"]:
        if job["note"]:
            out.print(f"  {job['job_id']}: {job['note']}")


# ---- benchmarks ------------------------------------------------------------------------------


def _fail(message: str) -> NoReturn:
    # escape: messages quote user input and pydantic text such as "[min, max]", which Rich
    # would read as markup; soft_wrap: one line, however narrow the terminal or pipe.
    err.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(1)


@app.command()
def demo(
    serve_after: Annotated[
        bool, typer.Option("--serve", help="Keep serving the API afterwards, until interrupted.")
    ] = False,
    scenario: Annotated[str, typer.Option(help="The scenario to run.")] = "demo",
) -> None:
    """Run a short multi-tenant scenario on the embedded defaults (SQLite registry, simulated
    cluster) through the real service: API, scheduling loop and agent realizer."""
    from scheduler.demo import run_demo
    from scheduler.logs import configure_logging

    configure_logging("warning", "console")
    run_demo(keep_serving=serve_after, console=out, scenario_name=scenario)


@bench_app.command("ingest")
def bench_ingest(
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="API of a running `henge serve` (needs its admin token). Without it, the "
            "benchmark starts its own server on loopback.",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token", help="Admin token for --url \\[env HENGE_TOKEN].", show_default=False
        ),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            help="Registry of the server the benchmark starts (migrated first). Default: a new "
            "Postgres database on 127.0.0.1:5432, dropped afterwards.",
        ),
    ] = None,
    agents: Annotated[int, typer.Option(min=1, help="Concurrent simulated agents (jobs).")] = 32,
    seconds: Annotated[float, typer.Option(min=0.1, help="Measured duration.")] = 20.0,
    warmup: Annotated[float, typer.Option(min=0, help="Seconds before measuring.")] = 2.0,
    seed: Annotated[int, typer.Option(help="Seed of the simulated metrics.")] = 1,
    batch: Annotated[
        int,
        typer.Option(
            min=1,
            max=100,
            help="Windows per request, posted to /reports/batch (1: one per request to /reports).",
        ),
    ] = 10,
    rate: Annotated[
        float | None,
        typer.Option(
            min=1,
            help="Windows per second, all agents together, each request timed from when it was "
            "due (default: every agent posts as fast as it is answered).",
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1, max=64, help="Server processes of the server the benchmark starts (--workers)."
        ),
    ] = 1,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Also write the figures to this JSON file.")
    ] = None,
) -> None:
    """Agent report ingestion: sustained reports (windows) per second and p50/p99 request
    latency on loopback (goal: 1,000 reports/s with p99 under 100 ms)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from scheduler.bench.ingest import measure_ingest, summary_lines

    total = warmup + seconds
    columns = (TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(f"{agents} agents posting", total=total)
        result = measure_ingest(
            url, token, database_url, agents, seconds, warmup_s=warmup, seed=seed, batch=batch,
            rate=rate, workers=workers, on_tick=lambda elapsed, posted: bar.update(
                task, completed=min(elapsed, total),
                description=f"{agents} agents posting: {posted:,} reports",
            ),
        )  # fmt: skip
    for line in summary_lines(result):
        out.print(line, highlight=False, soft_wrap=True)
    _write_json(json_file, result.to_dict())


@bench_app.command("soak")
def bench_soak(
    agents: Annotated[int, typer.Option(min=1, help="Agents (jobs), each reporting.")] = 100,
    seconds: Annotated[float, typer.Option(min=1, help="Length of the run.")] = 600.0,
    sub_window_s: Annotated[
        float, typer.Option(min=0.5, help="Each agent posts one window this long this often.")
    ] = 10.0,
    round_interval_s: Annotated[
        float, typer.Option(min=0.5, help="Seconds between rounds.")
    ] = 10.0,
    retention_s: Annotated[
        float, typer.Option(min=1, help="Windows and rounds older than this are purged.")
    ] = 120.0,
    purge_interval_s: Annotated[float, typer.Option(min=1, help="Seconds between purges.")] = 30.0,
    sample_s: Annotated[
        float, typer.Option(min=0.5, help="Seconds between samples of memory and registry.")
    ] = 10.0,
    json_file: FiguresFile = None,
) -> None:
    """A server under steady report load with rounds and retention on, on a scratch Postgres
    database: its memory and the registry's size over time (goal: memory growth < 5 % over the
    second half)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from scheduler.bench.soak import SoakSettings, run_soak, summary_lines

    settings = SoakSettings(
        agents=agents,
        seconds=seconds,
        sub_window_s=sub_window_s,
        round_interval_s=round_interval_s,
        retention_s=retention_s,
        purge_interval_s=purge_interval_s,
        sample_s=sample_s,
    )
    columns = (TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(f"{agents} agents reporting", total=seconds)
        result = run_soak(
            settings,
            on_tick=lambda elapsed, posted: bar.update(
                task, completed=min(elapsed, seconds),
                description=f"{agents} agents reporting: {posted:,} reports",
            ),
        )  # fmt: skip
    for line in summary_lines(result):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    _write_json(json_file, result.to_dict())
    if result.errors:
        raise typer.Exit(1)


@bench_app.command("dashboard")
def bench_dashboard(
    rounds: Annotated[int, typer.Option(help="Rounds in the registry.")] = 10_000,
    jobs: Annotated[int, typer.Option(help="Jobs in the registry.")] = 100,
    runs: Annotated[int, typer.Option(help="Openings of each page (after a warm-up).")] = 5,
    pg_server: Annotated[
        str, typer.Option(help="Postgres server to create the throw-away database on.")
    ] = DEFAULT_PG_SERVER,
    json_out: FiguresFile = None,
) -> None:
    """Page load times of the dashboard on a big registry (headless Chromium)."""
    from scheduler.bench.dashboard import run_dashboard_bench, summary_lines

    result = run_dashboard_bench(rounds=rounds, jobs=jobs, runs=runs, pg_server=pg_server)
    for line in summary_lines(result):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    _write_json(json_out, result)


@bench_app.command("overhead")
def bench_overhead(
    json_file: FiguresFile = None,
    sizes: Annotated[str, typer.Option(help="Job counts, comma-separated.")] = "100,1000,10000",
    repeats: Annotated[int, typer.Option(help="Timed decide() calls per size.")] = 30,
) -> None:
    """Time decide() on synthetic snapshots of many jobs, as a round calls it (the garbage
    collector paused): median and p99 in ms, and the median with the collector running."""
    from scheduler.bench.overhead import measure_decide

    try:
        counts = tuple(int(s) for s in sizes.split(","))
    except ValueError as exc:
        raise CLIError(f"--sizes takes whole numbers separated by commas, not {sizes!r}") from exc
    result = measure_decide(counts, repeats=repeats)
    rows = [
        [n, f"{v['median']:.2f}", f"{v['p99']:.2f}", f"{v['median_collecting']:.2f}"]
        for n, v in result["decide_ms"].items()
    ]
    columns = ["jobs", "median ms", "p99 ms", "collector running: median ms"]
    _table("decide() with the henge policy, as a round calls it", columns, rows)
    _write_json(json_file, result)


def _stretches(option: str, text: str) -> list[float]:
    """Seconds separated by commas, each finite and > 0."""
    try:
        stretches = [float(s) for s in text.split(",") if s.strip()]
    except ValueError as exc:
        raise CLIError(f"{option} takes seconds separated by commas, not {text!r}") from exc
    if any(not 0 < s < float("inf") for s in stretches):
        raise CLIError(f"{option} must be a finite number of seconds > 0 each")
    return stretches


@bench_app.command("history")
def bench_history(
    jobs: Annotated[int, typer.Option(min=1, help="Jobs with a full history.")] = 20,
    days: Annotated[float, typer.Option(min=1, help="Days of input minutes per job.")] = 35.0,
    pg_server: ScratchServer = DEFAULT_PG_SERVER,
    json_file: FiguresFile = None,
) -> None:
    """Each job's input per minute on a scratch Postgres database: its size on disk per job,
    the time to read one job's whole history and its last hour, and the roll-up's speed."""
    from scheduler.bench.history import measure, summary_lines
    from scheduler.bench.server import temporary_database

    with temporary_database(pg_server, "henge_history") as url:
        figures = measure(url, jobs, days)
    for line in summary_lines(figures):
        out.print(line)
    _write_json(json_file, figures.to_dict())


@bench_app.command("forecast")
def bench_forecast(
    report: Annotated[
        Path, typer.Option("--out", help="Markdown report of the comparison.")
    ] = Path("bench-out/forecasters.md"),
    only: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated candidate name prefixes (default: every installed one)."
        ),
    ] = None,
    origins: Annotated[int, typer.Option(min=1, help="Forecast origins per series.")] = 24,
    fleet: Annotated[
        int, typer.Option(min=0, help="Also fit this many five-week jobs at once (0: skip).")
    ] = 1000,
    spark_master: Annotated[
        str | None,
        typer.Option(
            help="Fit the --fleet jobs as one PySpark job on this master too "
            "(e.g. local[*]; needs the spark extra and Java 17)."
        ),
    ] = None,
) -> None:
    """Input-rate forecasters compared: statsforecast, statsmodels and Prophet where installed
    and the built-in seasonal profile, on install size, fit time on five weeks of minutes, MASE
    at 5, 15 and 60 minutes against seasonal-naive and the upper quantile's coverage, on the
    NASA trace (../shared/traces) and generated inputs; then the time to fit a fleet's forecasts
    in one process and, with --spark-master, as one PySpark job."""
    from scheduler.bench.forecast_fleet import measure
    from scheduler.bench.forecasters import compare

    report.parent.mkdir(parents=True, exist_ok=True)
    prefixes = [p.strip() for p in only.split(",") if p.strip()] if only else None
    text = compare(out=report, origin_count=origins, many=0, only=prefixes)
    if fleet:
        lines = measure(fleet, spark_master).lines()
        text += "\n" + "\n".join(f"- {line}" for line in lines) + "\n"
        report.write_text(text)
    out.print(text)
    out.print(f"wrote {report}")


@bench_app.command("reference")
def bench_reference(
    scenarios: Annotated[str, typer.Option(help="Comma-separated scenarios.")] = "tiers-diurnal",
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds.")] = "1,2,3",
    lookbacks: Annotated[
        str,
        typer.Option(
            help="Seconds of past input, comma-separated: one reactive reference per value, "
            "sized for the worst input of that stretch.",
        ),
    ] = "30,60",
    means: Annotated[
        str,
        typer.Option(
            help="Seconds of past input, comma-separated: one reactive reference per value, "
            "valuing each count at its mean utility over the inputs of that stretch.",
        ),
    ] = "60",
    foresight: Annotated[
        str,
        typer.Option(
            help="Seconds of future input, comma-separated: one reference per value that knows "
            "the input of that stretch ahead and values each count at its mean utility over "
            "it (none by default).",
        ),
    ] = "",
    quiesce: Annotated[
        float,
        typer.Option(
            help="Seconds each reference keeps an allocation that moved executors before it "
            "decides again (rounded up to whole rounds), as henge waits out a quiesce after "
            "each move. 0: a decision every round.",
        ),
    ] = 0.0,
    json_file: FiguresFile = None,
) -> None:
    """How much of the oracle's bound is reachable: allocations from the true job curves,
    re-solved every round (or after each move's --quiesce) and imposed at once, played through
    the simulated cluster."""
    from scheduler.bench.reference import measure_references
    from scheduler.bench.table import Spread, fraction_text
    from scheduler.logs import configure_logging
    from scheduler.sim.reference import references

    stretches = _stretches("--lookbacks", lookbacks), _stretches("--means", means)
    ahead = _stretches("--foresight", foresight)
    try:
        chosen = references(*stretches, quiesce_s=quiesce, foresights=ahead)
    except ValueError as exc:  # the quiesce, checked where a reference takes it
        raise CLIError(f"--quiesce: {exc} (0: decide every round)") from exc
    configure_logging("warning", "console")
    names = [n for n in scenarios.split(",") if n]
    for name in names:
        _load_scenario(name)
    figures = measure_references(names, _seeds(seeds, None), chosen)
    rows = [
        [
            scenario,
            reference,
            fraction_text(Spread(**values["utility_fraction"])),
            fraction_text(Spread(**values["oracle_fraction"])),
            f"{values['changes_per_job_day']:.1f}",
        ]
        for scenario, references in figures.items()
        for reference, values in references.items()
    ]
    columns = ["scenario", "reference", "utility fraction", "oracle fraction", "changes/job/day"]
    _table("reference allocations (mean (worst) over the seeds)", columns, rows)
    for reference in chosen:
        out.print(f"{reference.name}: {reference.summary}", highlight=False, soft_wrap=True)
    _write_json(json_file, figures)


@bench_app.command("plan")
def bench_plan(
    scenarios: Annotated[
        str, typer.Option(help="Comma-separated scenarios (default: every built-in one).")
    ] = "",
    seed: Annotated[int, typer.Option(help="Seed of each scenario's run.")] = 1,
    params: Annotated[
        str | None, typer.Option(help="Settings of henge as JSON, e.g. '{\"steady_error\": true}'.")
    ] = None,
    json_file: FiguresFile = None,
) -> None:
    """A job's options checked against the simulator's truth: each scenario runs under henge,
    and after a 10-minute warm-up every sixth round compares the options' predicted utility
    at the counts within 50 % of what each job holds with the world's true steady-state
    utility (mean absolute error as a fraction of the priority; goal 0.05), and checks that the
    count marked as the smallest meeting the SLO truly meets it. The same rounds check the
    capacity plan over the next 10 minutes: its peak cores against the cores the true models
    need (goal: within 10 % on the scenarios with several priority tiers), and, with the largest
    node gone, the tier it names to give way first against the oracle's. Jobs admitted after
    the scheduler's start are timed from admission until the policy trusts their model."""
    from scheduler.bench.plan import GOAL_CORES, GOAL_MAE, measure_plans
    from scheduler.logs import configure_logging
    from scheduler.sim.run import scenario_names

    configure_logging("warning", "console")
    overrides = _policy_params(params, "'{\"steady_error\": true}'")
    _check_policy("henge", overrides)
    names = scenario_names([n for n in scenarios.split(",") if n])
    for name in names:
        _load_scenario(name)
    figures = measure_plans(names, seed, overrides)
    rows = [
        [
            r["scenario"],
            r["checks"],
            r["untrusted"],
            r["compared"],
            r["mae"],
            r["p90"],
            r["mae_true_input"],
            f"{r['marked_met']}/{r['marked']}" if r["marked"] else None,
        ]
        for r in figures["scenarios"]
    ]
    columns = [
        "scenario", "trusted", "untrusted", "counts compared", "MAE", "p90",
        "MAE at the true input", "marked met",
    ]  # fmt: skip
    _table(f"options against the truth (seed {seed}; goal MAE <= {GOAL_MAE})", columns, rows)
    verdict = "met" if figures["goal_met"] else "missed"
    out.print(f"goal (MAE <= {GOAL_MAE} on every scenario with trusted models): {verdict}")
    rows = [
        [
            r["scenario"],
            r["tiers"],
            r["capacity_checks"],
            r["cores_error"],
            r["cores_bias"],
            r["cores_within"],
            r["cores_error_true_input"],
            f"{r['dropped_agree']}/{r['dropped']}" if r["dropped"] else None,
        ]
        for r in figures["scenarios"]
    ]
    columns = [
        "scenario", "tiers", "rounds", "peak cores: mean error", "bias", "within 10 %",
        "mean error at the true input",
        "a node short: first tier to give way agrees",
    ]  # fmt: skip
    _table(f"capacity against the truth (seed {seed})", columns, rows)
    verdict = "met" if figures["capacity_goal_met"] else "missed"
    goal = f"peak cores within {GOAL_CORES:.0%} on average on every tiered scenario"
    out.print(f"goal ({goal}): {verdict}")
    rows = [
        [
            r["scenario"],
            r["new_jobs"],
            r["trusted_new_jobs"],
            r["time_to_trust_median_s"],
            r["time_to_trust_max_s"],
            ", ".join(f"{reason} ({n})" for reason, n in list(r["held_by"].items())[:2]),
        ]
        for r in figures["scenarios"]
        if r["new_jobs"]
    ]
    columns = [
        "scenario",
        "new jobs",
        "trusted",
        "median s",
        "max s",
        "kept from trust by (rounds)",
    ]
    _table("jobs admitted after the start: time to a trusted model", columns, rows)
    _write_json(json_file, figures)


@bench_app.command("spark-contention")
def bench_spark_contention(
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Folder for the drivers' virtualenv (built once, then reused), the drivers' "
            "logs and the run's record (spark-contention.json).",
        ),
    ] = Path("bench-out/spark-contention"),
    figure: Annotated[Path, typer.Option(help="Where the figure of the run goes (PNG).")] = Path(
        "docs/img/spark-contention.png"
    ),
    pg_server: ScratchServer = DEFAULT_PG_SERVER,
    short: Annotated[
        bool, typer.Option("--short", help="The end-to-end test's shorter timeline.")
    ] = False,
) -> None:
    """Three priority tiers of PySpark streaming jobs on one real Spark standalone worker with
    fewer cores than they need at the top tier's spike, through `henge serve` on Postgres with
    the agent in each driver and the product policy. Needs Java 17 and the spark extra."""
    from scheduler.bench.contention_report import job_figures, run_bench, total_utility_fraction
    from scheduler.bench.server import ServerError
    from scheduler.bench.spark_contention import LONG, SHORT
    from scheduler.spark.apps import WaitFailed
    from scheduler.spark.driver_env import DriverEnvError
    from scheduler.spark.local_cluster import LocalClusterError

    _require_plotting("henge bench spark-contention")
    spec = SHORT if short else LONG
    try:
        run, drawn = run_bench(spec, out_dir, pg_server, figure, progress=err.print)
    except (LocalClusterError, DriverEnvError, ServerError, WaitFailed) as exc:
        _fail(f"spark-contention: {exc}")
    rows = [
        [
            tier.name, f"{tier.priority:g}", f"{f.utility_fraction:.3f}", f"{f.executors:.2f}",
            None if f.mean_latency_ms is None else f"{f.mean_latency_ms:,.0f}",
            None if f.slo_met_after_spike_s is None else f"{f.slo_met_after_spike_s:g}",
        ]
        for tier, f in ((t, job_figures(run)[t.name]) for t in spec.tiers)
    ]  # fmt: skip
    columns = ["job", "priority", "utility fraction", "executors (mean)", "mean latency ms",
               "SLO met after spike start (s)"]  # fmt: skip
    _table("spark-contention (time-weighted over the run)", columns, rows)
    out.print(
        f"total utility fraction {total_utility_fraction(run):.3f}; {len(run.actions)} actions "
        f"in {len(run.rounds)} rounds; figure {drawn}; record {out_dir / 'spark-contention.json'}",
        highlight=False,
        soft_wrap=True,
    )


@bench_app.command("calibrate")
def bench_calibrate(
    record: Annotated[
        Path | None,
        typer.Option(
            help="A recorded real run (spark-contention.json) to compare with, instead of "
            "running one (about 17 minutes).",
        ),
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where a real run goes (as for spark-contention).")
    ] = Path("bench-out/spark-contention"),
    scenario: Annotated[
        Path | None,
        typer.Option(
            help="The simulator's scenario of the run.",
            show_default="scheduler/sim/scenarios/real/spark-contention.yaml",
        ),
    ] = None,
    seeds: Annotated[str, typer.Option(help="Comma-separated simulator seeds.")] = "1,2,3",
    pg_server: Annotated[
        str, typer.Option(help="Postgres server for a real run's throw-away database.")
    ] = DEFAULT_PG_SERVER,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write the comparison here.")
    ] = None,
) -> None:
    """The real-Spark contention run against the simulator's scenario of it: per job and in
    total, the utility fraction, time-weighted executors, mean latency and the time to meet the
    SLO after the spike, on Spark and in the simulator (goal: total within 0.05, each job's
    executors within 1)."""
    from scheduler.bench.calibrate import (
        GOAL_EXECUTORS,
        GOAL_TOTAL,
        SCENARIO,
        calibrate,
        load_record,
        rows,
    )
    from scheduler.logs import configure_logging

    configure_logging("warning", "console")
    if record is None:
        bench_spark_contention(out_dir, out_dir / "spark-contention.png", pg_server, False)
        record = out_dir / "spark-contention.json"
    elif not record.is_file():
        _fail(f"calibrate: no record at {record}; run `henge bench spark-contention` first")
    try:
        figures = calibrate(load_record(record), _seeds(seeds, None), scenario or SCENARIO)
    except (KeyError, TypeError, ValueError) as exc:
        _fail(f"calibrate: {exc}")
    columns = ["job", "figure", "Spark", "simulator", "simulator − Spark"]
    _table(f"calibration (simulator: mean of {figures['seeds']} seeds)", columns, rows(figures))
    total_ok = "yes" if figures["total_within_goal"] else "NO"
    executors_ok = all(j["executors_within_goal"] for j in figures["jobs"].values())
    actions = figures["actions"]
    out.print(
        f"total utility fraction within {GOAL_TOTAL}: {total_ok}; every job's executors within "
        f"{GOAL_EXECUTORS:g}: {'yes' if executors_ok else 'NO'}; actions: Spark "
        f"{actions['real']}, simulator {actions['simulated']:.1f}",
        highlight=False,
        soft_wrap=True,
    )
    _write_json(json_file, figures)


@bench_app.command("fuzz")
def bench_fuzz(
    examples: Annotated[
        int, typer.Option(min=1, help="Generated cases per operation (each sent by 3 callers).")
    ] = 500,
    pg_server: ScratchServer = DEFAULT_PG_SERVER,
    json_file: FiguresFile = None,
) -> None:
    """Fuzz every operation of the served OpenAPI document as the admin, a tenant and an agent,
    against a real `henge serve` on a scratch Postgres database: no server error and no answer
    outside the document's response schemas. Needs the dev extra (schemathesis)."""
    from scheduler.bench.fuzz import measure_fuzz
    from scheduler.bench.server import ServerError
    from scheduler.logs import configure_logging

    configure_logging("warning", "console")
    try:
        result = measure_fuzz(examples, pg_server)
    except ImportError as exc:
        _fail(f"fuzz: {exc.name or exc} is missing: install the dev extra (make setup)")
    except ServerError as exc:
        _fail(f"fuzz: {exc}")
    for failure in result.failures:
        err.print(failure, highlight=False, soft_wrap=True)
    out.print(
        f"{result.cases} cases, each as admin, tenant and agent: {len(result.failures)} "
        "operations failed",
        highlight=False,
        soft_wrap=True,
    )
    _write_json(json_file, {"cases": result.cases, "failures": list(result.failures)})
    if result.failures:
        raise typer.Exit(1)


def _write_json(path: Path | None, figures: Any) -> None:
    """A benchmark's figures as JSON, when ``--json`` names a file."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=2) + "\n")
    out.print(f"wrote {path}", highlight=False, soft_wrap=True)


def _policy_params(raw: str | None, example: str = "'{\"quiesce_s\": 30}'") -> dict[str, Any]:
    if not raw:
        return {}
    try:
        params = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CLIError(f"--params must be a JSON object: {exc.msg}") from exc
    if not isinstance(params, dict):
        raise CLIError(f"--params must be a JSON object, e.g. {example}")
    return params


def _load_scenario(name: str) -> Any:
    from scheduler.sim.scenario_file import ScenarioError, load_scenario

    try:
        return load_scenario(name)
    except ScenarioError as exc:
        raise CLIError(str(exc)) from exc


def _check_policy(policy: str, params: dict[str, Any]) -> None:
    from scheduler.core.policies.registry import PolicySettingsError, UnknownPolicyError, get_policy

    try:
        get_policy(policy, params)
    except (UnknownPolicyError, PolicySettingsError) as exc:
        raise CLIError(str(exc)) from exc


@app.command()
def sim(
    scenario: Annotated[str, typer.Argument(help="A built-in scenario name or a YAML file.")],
    policy: Annotated[str, typer.Option(help="Scheduling policy.")] = "henge",
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same run).")] = 1,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write the run's summary.")
    ] = None,
    plot: Annotated[Path | None, typer.Option(help="Write a PNG of utility over time.")] = None,
    params: Annotated[str | None, typer.Option(help="Policy settings as JSON.")] = None,
    rounds: Annotated[
        Path | None,
        typer.Option(
            help="Write every round as a line of JSON: its time, state, action and reason, "
            "and each job's executors, utility, latency and utility under the oracle.",
        ),
    ] = None,
) -> None:
    """Run a scenario in the simulated cluster through the real scheduling loop."""
    from rich.progress import Progress

    from scheduler.logs import configure_logging
    from scheduler.sim.run import run_scenario, write_outputs, write_rounds

    configure_logging("warning", "console")  # one log line per round would drown the table
    if plot is not None:
        _require_plotting("henge sim --plot")
    chosen = _load_scenario(scenario)
    overrides = _policy_params(params)
    _check_policy(policy, overrides)
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task(f"{chosen.name} / {policy}", total=1.0)
        result = run_scenario(chosen, policy, seed, policy_params=overrides,
                              progress=lambda done: bar.update(task, completed=done))  # fmt: skip
    written = write_outputs(result, json_file, plot)
    if rounds is not None:
        write_rounds(result, rounds)
    _print_summary(written.summary, result.wall_seconds)
    for path in (json_file, plot, rounds):
        if path is not None:
            out.print(f"wrote {path}")


def _print_summary(summary: dict[str, Any], wall_s: float) -> None:
    utility, slo = summary["utility"], summary["slo_satisfaction"]
    ttm = summary["time_to_max_utility_s"]
    _table(
        f"{summary['scenario']} under {summary['policy']} (seed {summary['seed']})",
        ["measure", "value"],
        [
            ["simulated time", f"{summary['sim_seconds'] / 3600:.2f} h in {wall_s:.1f} s"],
            ["utility fraction", utility["fraction"]],
            ["oracle fraction", utility["oracle_fraction"]],
            ["SLO satisfaction mean / p15 / p50 / p90",
             " / ".join(f"{slo[k]:.3f}" for k in ("mean", "p15", "p50", "p90"))],
            ["time to max utility", "never" if ttm is None else f"{ttm:.0f} s"],
            ["actions", ", ".join(f"{k} {v}" for k, v in summary["actions"].items())],
            ["executor core-hours", summary["executor_core_hours"]],
        ],
    )  # fmt: skip


@bench_app.callback()
def bench(
    ctx: typer.Context,
    scenarios: Annotated[
        str | None,
        typer.Option(help="Comma-separated scenarios.", show_default="every built-in scenario"),
    ] = None,
    policies: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated policies. A variant, policy@label (henge@wide), runs the "
            "policy again in a row of its own, with the settings --params gives its name.",
            show_default="every policy",
        ),
    ] = None,
    seeds: Annotated[
        str, typer.Option(help="Comma-separated seeds: every scenario × policy runs with each.")
    ] = "1,2,3",
    seed: Annotated[
        int | None, typer.Option(help="One seed only (shorthand for --seeds N; wins over it).")
    ] = None,
    jobs: Annotated[
        int, typer.Option(min=1, help="Runs at a time, in worker processes when above 1.")
    ] = 1,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for the tables, JSON and plots.")
    ] = Path("bench-out"),
    params: Annotated[
        str | None,
        typer.Option(
            help="Policy settings as JSON, by policy (or variant) name, e.g. "
            '\'{"henge": {"backlog_debt": 0}}\'; policies not named keep their defaults.',
        ),
    ] = None,
) -> None:
    """Run scenarios × policies × seeds in the simulator (when no subcommand is given)."""
    if ctx.invoked_subcommand is not None:
        return
    _require_plotting("henge bench")
    from scheduler.bench.policies import run_bench
    from scheduler.logs import configure_logging

    configure_logging("warning", "console")
    names = scenarios.split(",") if scenarios else None
    chosen = policies.split(",") if policies else None
    for name in names or []:
        _load_scenario(name)
    seen: set[str] = set()
    for policy in chosen or []:
        _check_bench_entry(policy)
        if policy in seen:
            raise CLIError(f"--policies names {policy!r} twice")
        seen.add(policy)
    by_policy = _bench_params(params, chosen)
    table = run_bench(names, chosen, _seeds(seeds, seed), out_dir, console=err, jobs=jobs,
                      params=by_policy)  # fmt: skip
    out.print(f"wrote {table}")


_VARIANT_LABEL = re.compile(r"[A-Za-z0-9_.-]+")


def _check_bench_entry(entry: str) -> None:
    """An entry of ``henge bench --policies``: a policy, or a variant of one (``henge@wide``)."""
    from scheduler.bench.table import VARIANT_MARK, base_policy

    policy = base_policy(entry)
    _check_policy(policy, {})
    label = entry[len(policy) + 1 :] if VARIANT_MARK in entry else None
    if label is not None and not _VARIANT_LABEL.fullmatch(label):
        raise CLIError(
            f"--policies: {entry!r} is no variant name: after {policy}{VARIANT_MARK} come "
            "letters, digits, '.', '_' or '-' only (e.g. henge@wide)"
        )


def _bench_params(raw: str | None, chosen: list[str] | None) -> dict[str, dict[str, Any]]:
    """``--params`` of ``henge bench``: settings by policy (or variant) name, each checked by its
    policy."""
    from scheduler.bench.policies import bench_policies
    from scheduler.bench.table import base_policy

    example = '\'{"henge": {"quiesce_s": 30}}\''
    by_policy = _policy_params(raw, example)
    runs = bench_policies(chosen)
    for policy, settings in by_policy.items():
        if policy not in runs:
            raise CLIError(
                f"--params names {policy!r}, which is not a policy of this bench "
                f"({', '.join(runs)}); it maps policy names to their settings, e.g. {example}"
            )
        if not isinstance(settings, dict):
            raise CLIError(
                f"--params: the settings of {policy!r} must be a JSON object, e.g. {example}"
            )
        try:
            _check_policy(base_policy(policy), settings)
        except CLIError as exc:
            raise CLIError(f"--params of {policy!r}: {exc}") from exc
    return by_policy


def _seeds(seeds: str, seed: int | None) -> list[int]:
    if seed is not None:
        return [seed]
    try:
        chosen = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError as exc:
        raise CLIError(f"--seeds takes whole numbers separated by commas, not {seeds!r}") from exc
    if not chosen or len(set(chosen)) != len(chosen):
        raise CLIError(f"--seeds needs at least one seed and no seed twice, not {seeds!r}")
    return chosen


def main() -> None:
    """Entry point: every expected failure becomes one line on stderr and exit code 1."""
    problems = build_problems()
    if problems:
        _fail(problem_message(problems))
    # (imported once the compiled core is known to match its source)
    from scheduler.core.policy import PolicySettingsError, UnknownPolicyError

    try:
        app()
    except (CLIError, ClientError) as exc:
        _fail(str(exc))
    except (PolicySettingsError, UnknownPolicyError) as exc:
        # The commands that take a policy check it themselves; a server finds out at start.
        _fail(f"policy settings (HENGE_POLICY, HENGE_POLICY_PARAMS): {exc}")
    except ValidationError as exc:
        first = exc.errors()[0]
        _fail(f"bad setting {'.'.join(map(str, first['loc']))}: {first['msg']}")
    except KeyboardInterrupt:
        sys.exit(130)
