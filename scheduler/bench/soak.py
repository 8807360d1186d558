"""``henge bench soak``: a server under steady load for minutes, and whether it levels off.

Starts ``henge serve`` on a scratch Postgres database with rounds on and a short retention, so
that purging is part of the run; registers one job per agent; every agent then posts one window
per sub-window (realistic bodies, windows on the wall clock) for the whole run. Meanwhile the
server's resident memory, the registry's size on disk and its windows and rounds are sampled.
The goal: memory grows by less than 5 % over the second half of the run.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from scheduler.api_client import ClientError
from scheduler.bench.ingest import Tally, drive_agents, setup_agents
from scheduler.bench.server import ServerError, run_server, temporary_database

GOAL_RSS_GROWTH = 0.05
"""Largest growth of the server's memory over the second half of the run."""


@dataclass(frozen=True)
class SoakSettings:
    agents: int = 100
    seconds: float = 600.0
    sub_window_s: float = 10.0
    """Each agent posts one window this long every this many seconds."""
    round_interval_s: float = 10.0
    retention_s: float = 120.0
    """Windows and rounds older than this are purged."""
    purge_interval_s: float = 30.0
    sample_s: float = 10.0
    seed: int = 1


@dataclass(frozen=True)
class SoakSample:
    at_s: float
    rss_mb: float
    registry_mb: float
    windows: int
    rounds: int


@dataclass
class SoakResult:
    settings: SoakSettings
    samples: list[SoakSample] = field(default_factory=list)
    reports: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)

    def growth(self, pick: Callable[[SoakSample], float]) -> float | None:
        """Relative growth from the middle of the run to its end (``None``: too few samples)."""
        if len(self.samples) < 3:
            return None
        middle = self.samples[len(self.samples) // 2]
        start = pick(middle)
        return (pick(self.samples[-1]) - start) / start if start > 0 else None

    @property
    def rss_growth(self) -> float | None:
        return self.growth(lambda s: s.rss_mb)

    @property
    def registry_growth(self) -> float | None:
        return self.growth(lambda s: s.registry_mb)

    @property
    def goal_met(self) -> bool:
        growth = self.rss_growth
        return self.errors == 0 and growth is not None and growth < GOAL_RSS_GROWTH

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["rss_growth_second_half"] = self.rss_growth
        data["registry_growth_second_half"] = self.registry_growth
        data["goal"] = {"rss_growth_below": GOAL_RSS_GROWTH, "met": self.goal_met}
        return data


def resident_mb(pid: int) -> float:
    """The process's resident memory (``VmRSS``) in MiB; 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class _Sampler(threading.Thread):
    def __init__(self, pid: int, database_url: str, every_s: float, result: SoakResult) -> None:
        super().__init__(name="soak-sampler", daemon=True)
        self.pid, self.every_s, self.result = pid, every_s, result
        self.engine = create_engine(database_url, pool_size=1)
        self.began = time.monotonic()
        self.done = threading.Event()

    def sample(self) -> None:
        with self.engine.connect() as connection:
            size, windows, rounds = connection.execute(
                text(
                    "SELECT pg_database_size(current_database()), "
                    "(SELECT count(*) FROM metric_windows), (SELECT count(*) FROM rounds)"
                )
            ).one()
        self.result.samples.append(
            SoakSample(
                at_s=round(time.monotonic() - self.began, 1),
                rss_mb=round(resident_mb(self.pid), 1),
                registry_mb=round(size / 2**20, 2),
                windows=int(windows),
                rounds=int(rounds),
            )
        )

    def run(self) -> None:
        while not self.done.wait(self.every_s):
            self.sample()

    def finish(self) -> None:
        self.done.set()
        self.join(self.every_s + 10)
        self.sample()
        self.engine.dispose()


def run_soak(
    settings: SoakSettings, on_tick: Callable[[float, int], None] | None = None
) -> SoakResult:
    """The soak on a scratch database (created on 127.0.0.1:5432, dropped afterwards)."""
    if settings.agents < 1 or settings.seconds <= 0:
        raise ClientError("--agents must be at least 1 and --seconds positive")
    env = {
        "HENGE_ROUND_INTERVAL_S": str(settings.round_interval_s),
        "HENGE_SUB_WINDOW_S": str(settings.sub_window_s),
        "HENGE_WINDOW_S": str(6 * settings.sub_window_s),
        "HENGE_RETENTION_DAYS": repr(settings.retention_s / 86400),
        "HENGE_PURGE_INTERVAL_S": str(settings.purge_interval_s),
    }
    result = SoakResult(settings)
    try:
        with temporary_database() as url, run_server(url, env=env) as server:
            fleet = setup_agents(
                server.url,
                server.admin_token,
                settings.agents,
                settings.seed,
                start=datetime.now(UTC),
                window_s=settings.sub_window_s,
            )
            sampler = _Sampler(server.process.pid, url, settings.sample_s, result)
            sampler.sample()
            sampler.start()
            tally = Tally()
            rate = settings.agents / settings.sub_window_s
            try:
                asyncio.run(
                    drive_agents(server.url, fleet, settings.seconds, 0.0, 1, rate, tally, on_tick)
                )
            finally:
                sampler.finish()
    except ServerError as exc:
        raise ClientError(f"could not start a server for the soak: {exc}") from exc
    result.reports, result.errors, result.error_samples = tally.windows, tally.errors, tally.samples
    return result


def summary_lines(result: SoakResult) -> list[str]:
    """The figures for people, the goal's verdict last."""
    s = result.settings
    lines = [
        f"soak: {s.agents} agents, one {s.sub_window_s:g}-s window each every "
        f"{s.sub_window_s:g} s, "
        f"{s.seconds:g} s; rounds every {s.round_interval_s:g} s; retention {s.retention_s:g} s "
        f"(purged every {s.purge_interval_s:g} s); {result.reports} reports, "
        f"{result.errors} errors",
        "  time s   memory MiB   registry MiB   windows   rounds",
    ]
    lines += [
        f"  {x.at_s:6.0f}   {x.rss_mb:10.1f}   {x.registry_mb:12.2f}   {x.windows:7d}   "
        f"{x.rounds:6d}"
        for x in result.samples
    ]
    rss, registry = result.rss_growth, result.registry_growth
    lines.append(
        "second half: memory "
        + (f"{rss:+.1%}" if rss is not None else "n/a")
        + ", registry "
        + (f"{registry:+.1%}" if registry is not None else "n/a")
    )
    verdict = "met" if result.goal_met else "missed"
    lines.append(f"goal (memory growth < {GOAL_RSS_GROWTH:.0%} over the second half): {verdict}")
    return lines
