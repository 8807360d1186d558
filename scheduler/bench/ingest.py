"""``henge bench ingest``: how many agent reports per second the API sustains, and how fast.

Creates a tenant and one job per simulated agent through the API, then runs the agents
concurrently on loopback (asyncio + httpx): each posts consecutive 10-second windows of
realistic report bodies as fast as the server answers, ``batch`` windows per request to
``/v1/jobs/{id}/reports/batch`` (the path agents take for what they have queued), or one per
request to ``/v1/jobs/{id}/reports`` with ``batch`` 1. The goal (DESIGN §8) is at least 1,000
reports (windows) per second with p99 request latency under 100 ms.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import secrets
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from rich.markup import escape

from scheduler.api.schemas import MAX_BATCH_WINDOWS
from scheduler.api_client import ClientError, describe_error
from scheduler.config import ClientSettings

GOAL_REPORTS_PER_S = 1000.0
GOAL_P99_MS = 100.0
SUB_WINDOW_S = 10
ROUND_INTERVAL_S = 10.0
"""Seconds between rounds of a server the bench starts (the default setting)."""
_EARLY = 0.05
"""A round starting up to this fraction of an interval before its slot counts as on time."""
GOAL_ROUND_DELAY_S = 1.0
DEFAULT_BATCH = 10
"""Windows per request by default: what an agent sends after it could not deliver for a while
(the single-report route, ``--batch 1``, is what an agent sends every sub-window)."""


@dataclass
class IngestResult:
    url: str
    agents: int
    seconds: float
    batch: int
    """Windows per request (1: the single-report route)."""
    offered_per_s: float | None
    """Windows per second the agents were set to send (``None``: as fast as answered)."""
    reports: int
    """Windows the server acknowledged in the measured time."""
    errors: int
    reports_per_s: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    duplicates: int = 0
    client_cpu_fraction: float = 0.0
    measured_from: str = ""
    """When the measured part began (UTC, ISO-8601)."""
    round_delay_p99_s: float | None = None
    """How late the scheduler's rounds started during the measured part (p99, seconds), when
    the bench started the server and so knows their interval."""
    rounds: int = 0
    rounds_skipped: int = 0
    error_samples: list[str] = field(default_factory=list)
    server: dict[str, Any] = field(default_factory=dict)

    @property
    def carried_per_s(self) -> float:
        """The rate the run shows the server carries: at a set rate, that rate when every
        window due in the measured time was acknowledged (each request is timed from when it
        was due, so a server that falls behind shows it in the latencies; the rate counted up
        to the last answer reads a little under the one set even then), else the rate
        measured."""
        if self.offered_per_s is not None and self.errors == 0:
            return self.offered_per_s
        return self.reports_per_s

    @property
    def goal_met(self) -> bool:
        late = self.round_delay_p99_s is not None and self.round_delay_p99_s >= GOAL_ROUND_DELAY_S
        return (
            self.errors == 0
            and self.carried_per_s >= GOAL_REPORTS_PER_S
            and self.p99_ms < GOAL_P99_MS
            and not late
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["goal"] = {
            "reports_per_s": GOAL_REPORTS_PER_S,
            "p99_ms": GOAL_P99_MS,
            "carried_per_s": self.carried_per_s,
            "met": self.goal_met,
        }
        return data


# ---- realistic report bodies -----------------------------------------------------------------


class SimulatedJob:
    """One streaming job's metrics, evolving window by window: a noisy input rate around a
    base, executors with finite throughput, a backlog that grows when input outpaces them,
    two to five micro-batches per window, latencies that follow the backlog, a 3-operator graph.
    """

    def __init__(self, rng: random.Random, start: datetime, window_s: float = SUB_WINDOW_S) -> None:
        self.rng = rng
        self.window_start = start
        self.window_s = window_s
        self.executors = rng.randint(2, 12)
        self.cores = rng.choice((1, 1, 2, 4))
        self.base_rate = rng.uniform(500, 20_000)  # rows/s
        self.per_core_rate = rng.uniform(300, 3_000)  # rows/s one core can process
        self.backlog = 0.0
        self.sources = ["events"] if rng.random() < 0.7 else ["events", "clicks"]

    def next_report(self) -> dict[str, Any]:
        rng = self.rng
        start = self.window_start
        end = start + timedelta(seconds=self.window_s)
        self.window_start = end
        if rng.random() < 0.02:  # the tenant's traffic moves now and then; executors follow
            self.base_rate *= rng.uniform(0.7, 1.4)
            self.executors = max(1, self.executors + rng.choice((-1, 1)))
        arrived = max(0.0, rng.gauss(self.base_rate, self.base_rate * 0.1)) * self.window_s
        capacity = self.executors * self.cores * self.per_core_rate * self.window_s
        processed = min(arrived + self.backlog, capacity * rng.uniform(0.85, 1.0))
        self.backlog = max(0.0, self.backlog + arrived - processed)
        busy = min(1.0, processed / capacity if capacity else 0.0) * rng.uniform(0.8, 1.0)
        slots = self.executors * self.cores

        n_batches = rng.randint(2, 5)
        bounds = sorted(rng.uniform(0, self.window_s) for _ in range(n_batches - 1))
        edges = [0.0, *bounds, self.window_s]
        batches = []
        left = processed
        for i in range(n_batches):
            rows = left if i == n_batches - 1 else processed / n_batches * rng.uniform(0.8, 1.2)
            rows = max(0.0, min(rows, left))
            left -= rows
            b_start = start + timedelta(seconds=edges[i])
            b_end = start + timedelta(seconds=max(edges[i], edges[i + 1] - 0.05))
            batches.append(
                {
                    "start": _iso(b_start),
                    "end": _iso(b_end),
                    "rows": round(rows),
                    "backlog_at_start": round(self.backlog * rng.uniform(0.5, 1.5)),
                }
            )
        mean_latency = 200 + 1000 * self.window_s * self.backlog / max(capacity, 1.0)
        mean_latency *= rng.uniform(0.8, 1.2)
        shares = [rng.uniform(0.3, 1.0) for _ in self.sources]
        total_share = sum(shares)
        sources = [
            {
                "name": name,
                "arrived_rows": round(arrived * share / total_share),
                "processed_rows": round(processed * share / total_share),
                "backlog_rows": round(self.backlog * share / total_share),
            }
            for name, share in zip(self.sources, shares, strict=True)
        ]
        selectivity = rng.uniform(0.2, 0.6)
        return {
            "window_start": _iso(start),
            "window_end": _iso(end),
            "executors": self.executors,
            "cores_per_executor": self.cores,
            "busy_core_ms": round(busy * slots * self.window_s * 1000),
            "max_parallelism": slots * rng.choice((2, 4)),
            "sources": sources,
            "batches": batches,
            "latency_ms": {
                "mean": round(mean_latency, 1),
                "p95": round(mean_latency * rng.uniform(1.3, 1.8), 1),
                "p99": round(mean_latency * rng.uniform(1.8, 2.6), 1),
            },
            "edges": [
                {
                    "parent": "source",
                    "child": "parse",
                    "sent": round(arrived),
                    "executed": round(processed),
                },
                {
                    "parent": "parse",
                    "child": "aggregate",
                    "sent": round(processed),
                    "executed": round(processed * selectivity),
                },
            ],
        }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def job_definition(index: int, rng: random.Random) -> dict[str, Any]:
    return {
        "name": f"ingest-{index:04d}",
        "priority": rng.choice((1, 5, 10, 35, 70)),
        "slo": {
            "latency_ms": rng.choice((500, 1000, 2000, 5000)),
            "latency_stat": "mean",
            "juice": rng.choice((0.9, 0.95, 1.0)),
        },
        "executors": {"initial": 2, "min": 1, "max": 40, "cores": 1, "memory_mb": 2048},
        "actuator": "agent",
    }


# ---- the run ---------------------------------------------------------------------------------


@dataclass
class _Agent:
    job_id: str
    token: str
    job: SimulatedJob
    ready: list[bytes] = field(default_factory=list)
    """Request bodies made before the run, sent in order before any made during it."""

    def body(self, batch: int) -> bytes:
        """The next request's body: ``batch`` windows (a batch document when over 1)."""
        if self.ready:
            return self.ready.pop(0)
        if batch > 1:
            document: Any = {"reports": [self.job.next_report() for _ in range(batch)]}
        else:
            document = self.job.next_report()
        return json.dumps(document, separators=(",", ":")).encode()


def _check(response: httpx.Response, what: str) -> Any:
    if response.status_code >= 400:
        raise ClientError(f"{what}: {describe_error(response)}")
    return response.json()


def setup_agents(
    url: str,
    admin_token: str,
    agents: int,
    seed: int,
    *,
    start: datetime | None = None,
    window_s: float = SUB_WINDOW_S,
) -> list[_Agent]:
    """A new tenant with ``agents`` jobs, registered through the API, whose windows of
    ``window_s`` begin at ``start`` (default: a day back, so that windows posted as fast as
    answered stay in the past for hours)."""
    rng = random.Random(seed)
    if start is None:
        start = (datetime.now(UTC) - timedelta(days=1)).replace(microsecond=0)
    with httpx.Client(base_url=url, timeout=30) as http:
        try:
            tenant = _check(
                http.post(
                    "/v1/tenants",
                    json={"name": f"bench-{secrets.token_hex(4)}"},
                    headers={"Authorization": f"Bearer {admin_token}"},
                ),
                "creating the bench tenant",
            )
        except httpx.HTTPError as exc:
            raise ClientError(f"cannot reach the Henge API at {url}: {exc}") from exc
        tenant_auth = {"Authorization": f"Bearer {tenant['token']}"}
        made = []
        for i in range(agents):
            job = _check(
                http.post("/v1/jobs", json=job_definition(i, rng), headers=tenant_auth),
                f"registering bench job {i}",
            )
            made.append(
                _Agent(
                    job["id"],
                    job["agent_token"],
                    SimulatedJob(random.Random(rng.random()), start, window_s),
                )
            )
    return made


@dataclass
class Tally:
    latencies_ms: list[float] = field(default_factory=list)
    """One per measured request."""
    windows: int = 0
    """Windows acknowledged (stored or duplicate) in the measured requests."""
    errors: int = 0
    duplicates: int = 0
    samples: list[str] = field(default_factory=list)
    posted: int = 0  # answers so far, warm-up included (for the progress display)

    def error(self, text: str) -> None:
        self.errors += 1
        if len(self.samples) < 5:
            self.samples.append(text)


@dataclass(frozen=True)
class _Load:
    measure_from: float
    stop_at: float
    batch: int
    interval_s: float | None
    """Each agent's time between requests (``None``: back to back, as fast as answered)."""


async def _agent_loop(url: str, agent: _Agent, load: _Load, tally: Tally) -> float:
    """Post windows back to back until ``stop_at``; returns when the last answer came.

    Each agent has a client (one keep-alive connection) of its own, like a real agent: one
    pool shared by many concurrent requests costs httpx far more CPU than the requests."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        return await _post_windows(client, agent, load, tally)


async def _post_windows(
    client: httpx.AsyncClient, agent: _Agent, load: _Load, tally: Tally
) -> float:
    headers = {"Authorization": f"Bearer {agent.token}", "Content-Type": "application/json"}
    path = f"/v1/jobs/{agent.job_id}/reports" + ("/batch" if load.batch > 1 else "")
    last = time.perf_counter()
    due = last + (random.uniform(0, load.interval_s) if load.interval_s else 0.0)
    while True:
        began = time.perf_counter()
        if load.interval_s:
            # At a set rate a request is timed from when it was due, so that time spent behind
            # schedule counts as the waiting it is.
            if due > began:
                await asyncio.sleep(due - began)
            began, due = due, due + load.interval_s
        if began >= load.stop_at:
            return last
        body = agent.body(load.batch)
        try:
            response = await client.post(path, content=body, headers=headers)
        except httpx.HTTPError as exc:
            last = time.perf_counter()
            if began >= load.measure_from:
                tally.error(f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(0.05)
            continue
        last = time.perf_counter()
        tally.posted += load.batch
        if began < load.measure_from:
            continue
        if response.status_code == 200:
            tally.latencies_ms.append((last - began) * 1000)
            _count_windows(response.json(), tally)
        else:
            tally.error(describe_error(response))


def _count_windows(answer: dict[str, Any], tally: Tally) -> None:
    """Acknowledged windows, duplicates and refusals of one answer (single or batch)."""
    for result in answer.get("results") or [answer]:
        refused = result.get("status") == "rejected"
        if refused:
            tally.error(str(result.get("detail"))[:300])
            continue
        tally.windows += 1
        if result.get("duplicate") or result.get("status") == "duplicate":
            tally.duplicates += 1


async def drive_agents(
    url: str,
    agents: list[_Agent],
    seconds: float,
    warmup_s: float,
    batch: int,
    rate: float | None,
    tally: Tally,
    on_tick: Any = None,
) -> tuple[float, float]:
    interval = batch * len(agents) / rate if rate else None
    if interval is not None:
        # At a set rate every body is made before the clock starts: the load generator shares
        # the machine's cores with the server, and its own work must not delay the requests.
        for agent in agents:
            agent.ready = [
                agent.body(batch) for _ in range(math.ceil((warmup_s + seconds) / interval) + 1)
            ]
    begin = time.perf_counter()
    load = _Load(begin + warmup_s, begin + warmup_s + seconds, batch, interval)
    tasks = [asyncio.create_task(_agent_loop(url, a, load, tally)) for a in agents]
    if on_tick is not None:
        while not all(t.done() for t in tasks):
            on_tick(time.perf_counter() - begin, tally.posted)
            await asyncio.wait(tasks, timeout=0.25)
    ends = await asyncio.gather(*tasks)
    return load.measure_from, max(ends)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]); 0 when there are no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def run_ingest(
    url: str,
    admin_token: str,
    agents: int = 32,
    seconds: float = 20.0,
    *,
    warmup_s: float = 2.0,
    seed: int = 1,
    batch: int = DEFAULT_BATCH,
    rate: float | None = None,
    on_tick: Any = None,
) -> IngestResult:
    """Register ``agents`` jobs, then let them post reports as fast as the server answers for
    ``warmup_s`` (not counted) plus ``seconds`` (measured), ``batch`` windows per request;
    with ``rate`` (windows per second, all agents together) at that rate instead."""
    if agents < 1 or seconds <= 0:
        raise ClientError("--agents must be at least 1 and --seconds positive")
    if not 1 <= batch <= MAX_BATCH_WINDOWS:
        raise ClientError(f"--batch must be between 1 and {MAX_BATCH_WINDOWS}")
    url = url.rstrip("/")
    fleet = setup_agents(url, admin_token, agents, seed)
    tally = Tally()
    measured_from = datetime.now(UTC) + timedelta(seconds=warmup_s)
    cpu_before, wall_before = time.process_time(), time.perf_counter()
    measure_from, last_answer = asyncio.run(
        drive_agents(url, fleet, seconds, warmup_s, batch, rate, tally, on_tick)
    )
    cpu = time.process_time() - cpu_before
    wall = time.perf_counter() - wall_before
    elapsed = max(last_answer - measure_from, 1e-9)
    lat = tally.latencies_ms
    return IngestResult(
        url=url,
        agents=agents,
        seconds=round(elapsed, 3),
        batch=batch,
        offered_per_s=rate,
        reports=tally.windows,
        errors=tally.errors,
        reports_per_s=round(tally.windows / elapsed, 1),
        p50_ms=round(statistics.median(lat), 2) if lat else 0.0,
        p90_ms=round(percentile(lat, 90), 2),
        p99_ms=round(percentile(lat, 99), 2),
        max_ms=round(max(lat), 2) if lat else 0.0,
        duplicates=tally.duplicates,
        client_cpu_fraction=round(cpu / wall, 3) if wall else 0.0,
        measured_from=measured_from.isoformat(),
        error_samples=tally.samples,
    )


def round_start_delays(
    url: str, admin: str, since: str, interval_s: float
) -> tuple[list[float], int]:
    """How late each round since ``since`` started against its schedule (the first of them,
    then every ``interval_s``), in seconds, and how many scheduled rounds did not run."""
    with httpx.Client(base_url=url, timeout=30) as http:
        rounds = _check(
            http.get(
                "/v1/rounds",
                params={"since": since, "limit": 10_000},
                headers={"Authorization": f"Bearer {admin}"},
            ),
            "reading the rounds",
        )
    starts = sorted(datetime.fromisoformat(r["started_at"]) for r in rounds)
    if not starts:
        return [], 0
    delays, slot = [], 0
    for moment in starts:
        # The slot a round belongs to is the last one due before it started (a little early
        # is clock jitter): a round 6 s late on a 10-s schedule is 6 s late, not 4 s early.
        slot = math.floor((moment - starts[0]).total_seconds() / interval_s + _EARLY)
        due = starts[0] + timedelta(seconds=slot * interval_s)
        delays.append(max(0.0, (moment - due).total_seconds()))
    return delays, slot + 1 - len(starts)


# ---- the command -----------------------------------------------------------------------------


@contextmanager
def _own_server(database_url: str | None, workers: int) -> Iterator[tuple[str, str]]:
    """Start ``henge serve --workers N`` on loopback against ``database_url`` or a throw-away
    Postgres database (created on 127.0.0.1:5432, dropped afterwards)."""
    from scheduler.bench.server import ServerError, run_server, temporary_database

    args = ["--workers", str(workers)]
    try:
        if database_url is not None:
            with run_server(database_url, args=args) as handle:
                yield handle.url, handle.admin_token
            return
        with temporary_database() as url, run_server(url, args=args) as handle:
            yield handle.url, handle.admin_token
    except ServerError as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        detail = f"{lines[0]} {lines[-1]}" if len(lines) > 1 else lines[0]
        raise ClientError(f"could not start a server for the benchmark: {detail}") from exc


def measure_ingest(
    url: str | None,
    token: str | None,
    database_url: str | None,
    agents: int,
    seconds: float,
    *,
    warmup_s: float = 2.0,
    seed: int = 1,
    batch: int = DEFAULT_BATCH,
    rate: float | None = None,
    workers: int = 1,
    on_tick: Callable[[float, int], None] | None = None,
) -> IngestResult:
    """The benchmark against ``url`` (a running server, with its admin ``token`` or
    ``HENGE_TOKEN``), or against a server of ``workers`` processes it starts on
    ``database_url`` (default: a new Postgres database on 127.0.0.1:5432, dropped
    afterwards)."""
    from psycopg import OperationalError as PgError

    if url is not None:
        admin = token or ClientSettings().token_value()
        if not admin:
            raise ClientError("--url needs the server's admin token: --token or HENGE_TOKEN")
        result = run_ingest(url, admin, agents, seconds, warmup_s=warmup_s, seed=seed,
                            batch=batch, rate=rate, on_tick=on_tick)  # fmt: skip
        result.server = {"url": url, "started_by_bench": False}
        return result
    try:
        with _own_server(database_url, workers) as (api_url, admin):
            result = run_ingest(api_url, admin, agents, seconds, warmup_s=warmup_s, seed=seed,
                                batch=batch, rate=rate, on_tick=on_tick)  # fmt: skip
            delays, skipped = round_start_delays(
                api_url, admin, result.measured_from, ROUND_INTERVAL_S
            )
    except PgError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClientError(f"cannot create the benchmark database: {first}") from exc
    result.rounds, result.rounds_skipped = len(delays), skipped
    result.round_delay_p99_s = round(percentile(delays, 99), 3) if delays else None
    result.server = {
        "started_by_bench": True,
        "database": "given" if database_url else "temporary postgres",
        "workers": workers,
    }
    return result


def summary_lines(result: IngestResult) -> list[str]:
    """The figures for people (Rich markup), the goal's verdict last."""
    lines = [
        f"ingest: {result.agents} agents, {result.batch} window(s) per request, "
        + (f"set to {result.offered_per_s:,.0f}/s, " if result.offered_per_s else "")
        + f"{result.seconds:.1f} s measured: [bold]{result.reports_per_s:,.0f} reports/s[/], "
        f"p50 {result.p50_ms:.1f} ms, p90 {result.p90_ms:.1f} ms, "
        f"p99 {result.p99_ms:.1f} ms, max {result.max_ms:.1f} ms; "
        f"{result.reports} reports, {result.errors} errors"
    ]
    if result.error_samples:
        lines.append(f"first errors: {escape(str(result.error_samples))}")
    if result.round_delay_p99_s is not None:
        lines.append(
            f"rounds: {result.rounds} during the measured part ({result.rounds_skipped} "
            f"skipped), started up to {result.round_delay_p99_s:.2f} s late "
            f"(p99; goal < {GOAL_ROUND_DELAY_S:g} s)"
        )
    verdict = "[green]met[/]" if result.goal_met else "[red]missed[/]"
    lines.append(
        f"goal (>= {GOAL_REPORTS_PER_S:,.0f} reports/s, p99 < {GOAL_P99_MS:.0f} ms, no errors"
        + (", rounds on time" if result.round_delay_p99_s is not None else "")
        + "): "
        + f"{verdict}; the load generator used {result.client_cpu_fraction:.0%} of a core"
    )
    return lines
