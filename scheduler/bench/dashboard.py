"""``henge bench dashboard``: how fast the dashboard's pages load on a big registry.

A real ``henge serve`` on a throw-away Postgres database seeded with ``rounds`` rounds and
``jobs`` jobs (see :mod:`scheduler.bench.dashboard_seed`), and Debian's headless Chromium driven by
Playwright. Each page is opened ``runs`` times after a warm-up; the browser's own timing says
when the document loaded (``performance.getEntriesByType('navigation')``: load event end), when
the page's data was fetched and rendered (the ``henge:ready`` mark) and when its charts were
first drawn (Chart.js's first render, from ``window.__hengeCharts``).

    henge bench dashboard --rounds 10000 --jobs 100
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from scheduler.bench.dashboard_seed import seed_registry
from scheduler.bench.server import DEFAULT_PG_SERVER, run_server, temporary_database

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMING = """() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const ready = performance.getEntriesByName('henge:ready')[0];
    const drawn = Object.values(window.__hengeCharts || {}).map((c) => c.drawnAt);
    return {
        dom_ms: nav.domContentLoadedEventEnd, load_ms: nav.loadEventEnd,
        ready_ms: ready ? ready.startTime : null,
        charts_ms: drawn.length && drawn.every((t) => t !== null) ? Math.max(...drawn) : null,
        charts: drawn.length,
        points: Object.values(window.__hengeCharts || {}).reduce((n, c) => n + c.points, 0),
    };
}"""


@dataclass
class PageTiming:
    page: str
    path: str
    runs: int
    load_ms: float
    ready_ms: float
    ready_max_ms: float
    charts_ms: float | None
    charts: int
    points: int


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def _api_timings(url: str, token: str, job_id: str) -> dict[str, float]:
    """Server-side time of the biggest data calls, as a client sees it (median of 5)."""
    calls = {
        "/v1/rounds?limit=10000": "/v1/rounds?limit=10000",
        "/v1/jobs": "/v1/jobs",
        "/v1/jobs/{id}/history?limit=10000": f"/v1/jobs/{job_id}/history?limit=10000",
    }
    result = {}
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as http:
        for name, path in calls.items():
            spent = []
            for _ in range(6):
                started = time.perf_counter()
                http.get(path, timeout=60).raise_for_status()
                spent.append((time.perf_counter() - started) * 1000)
            result[name] = _median(spent[1:])
    return result


def _measure(page: Any, name: str, path: str, runs: int) -> PageTiming:
    samples = []
    for run in range(runs + 1):  # the first opening warms caches and is not counted
        page.goto(path)
        page.wait_for_function("() => document.body.dataset.ready === '1'", timeout=60_000)
        page.wait_for_function(
            "() => performance.getEntriesByType('navigation')[0].loadEventEnd > 0"
        )
        if run:
            samples.append(page.evaluate(TIMING))
    charts = [s["charts_ms"] for s in samples if s["charts_ms"] is not None]
    return PageTiming(
        page=name,
        path=path,
        runs=runs,
        load_ms=_median([s["load_ms"] for s in samples]),
        ready_ms=_median([s["ready_ms"] for s in samples]),
        ready_max_ms=round(max(s["ready_ms"] for s in samples), 1),
        charts_ms=_median(charts) if charts else None,
        charts=samples[-1]["charts"],
        points=samples[-1]["points"],
    )


def run_dashboard_bench(
    rounds: int = 10_000,
    jobs: int = 100,
    tenants: int = 10,
    windows_per_job: int = 360,
    runs: int = 5,
    pg_server: str = DEFAULT_PG_SERVER,
) -> dict[str, Any]:
    """Seed, serve, open every page ``runs`` times; return the timings."""
    if not CHROMIUM.exists():
        raise RuntimeError(f"no Chromium at {CHROMIUM}: run scripts/ensure-chromium.sh")
    from playwright.sync_api import sync_playwright

    with (
        temporary_database(pg_server, prefix="henge_dashbench") as url,
        run_server(url, args=["--no-scheduler"], env={"HENGE_LOG_LEVEL": "warning"}) as server,
    ):
        started = time.perf_counter()
        seeded = seed_registry(
            server.url,
            server.admin_token,
            url,
            tenants=tenants,
            jobs=jobs,
            rounds=rounds,
            reports_per_job=3,
            bulk_windows_per_job=windows_per_job,
        )
        windows = jobs * (windows_per_job + 3)
        spent = time.perf_counter() - started
        print(f"seeded {rounds} rounds ({seeded.actions} actions), {jobs} jobs, {windows} windows")
        print(f"  in {spent:.1f} s")
        job = seeded.jobs[0].id
        pages = {
            "overview": "/ui/?range=all",
            "jobs": "/ui/jobs",
            "job": f"/ui/jobs/{job}?range=all",
            "rounds": "/ui/rounds?range=all",
            "capacity": "/ui/capacity",
        }
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            context = browser.new_context(
                base_url=server.url, viewport={"width": 1400, "height": 900}
            )
            page = context.new_page()
            page.goto("/ui/login")
            page.fill("#token", server.admin_token)
            with page.expect_navigation():
                page.click("#sign-in")
            timings = [_measure(page, name, path, runs) for name, path in pages.items()]
            browser.close()
        api = _api_timings(server.url, server.admin_token, job)
    result = {
        "rounds": rounds,
        "jobs": jobs,
        "tenants": tenants,
        "actions": seeded.actions,
        "windows_per_job": windows_per_job + 3,
        "runs": runs,
        "pages": [asdict(t) for t in timings],
        "api_ms": api,
    }
    return result


def summary_lines(result: dict[str, Any]) -> list[str]:
    """The timings for people: a header, one line per page, the API calls."""
    lines = [
        f"Dashboard, {result['rounds']} rounds, {result['jobs']} jobs: median of "
        f"{result['runs']} page loads (browser timing, ms)",
        f"{'page':<10} {'load':>7} {'data shown':>11} {'(max)':>7} {'charts':>7}  drawn",
    ]
    for p in result["pages"]:
        charts = "-" if p["charts_ms"] is None else f"{p['charts_ms']:.0f}"
        lines.append(
            f"{p['page']:<10} {p['load_ms']:>7.0f} {p['ready_ms']:>11.0f} "
            f"{p['ready_max_ms']:>7.0f} {charts:>7}  {p['charts']} charts, {p['points']} points"
        )
    lines.append("API (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in result["api_ms"].items()))
    return lines
