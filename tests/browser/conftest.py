"""Browser tests of the dashboard: a real ``henge serve`` on a fresh Postgres database, seeded
with tenants, jobs, reports and rounds, driven by Debian's headless Chromium through Playwright.

The setup installs what it needs (Playwright for Python with pip, Chromium with
``scripts/ensure-chromium.sh``) and skips with the reason only when that cannot be done.
Screenshots of every page go to ``test-artifacts/browser/``.
"""

from __future__ import annotations

import fcntl
import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from scheduler.bench.dashboard import CHROMIUM, CHROMIUM_ARGS
from scheduler.bench.dashboard_seed import Seeded, seed_registry
from tests.conftest import create_database, drop_database
from tests.serving import ServerHandle, run_server

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
PLAYWRIGHT_PIN = "playwright==1.65.2"
SEED_ROUNDS = 300
SEED_JOBS = 6
REFRESH_S = 5  # the pages refresh every max(5 s, round interval)


def _ensure_playwright() -> None:
    if importlib.util.find_spec("playwright") is not None:
        return
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", PLAYWRIGHT_PIN],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode != 0 or importlib.util.find_spec("playwright") is None:
        pytest.skip(
            f"Playwright for Python is not installed and pip could not install it: "
            f"{(result.stderr or result.stdout).strip()[-300:]}"
        )


def _ensure_chromium() -> None:
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "ensure-chromium.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if result.returncode != 0 or not CHROMIUM.exists():
        pytest.skip(f"no headless Chromium at {CHROMIUM}: {result.stderr.strip()[-300:]}")


@contextmanager
def _one_installer_at_a_time() -> Iterator[None]:
    """The tests run in several worker processes, each with this session fixture: two pip or
    apt-get runs at once would fail on each other's locks, so the workers take turns."""
    lock = Path(tempfile.gettempdir()) / "henge-browser-setup.lock"
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    with _one_installer_at_a_time():
        _ensure_playwright()
        _ensure_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@dataclass
class Dashboard:
    server: ServerHandle
    seeded: Seeded
    database_url: str

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def admin_token(self) -> str:
        return self.server.admin_token

    def secrets(self) -> list[str]:
        agents = [j.agent_token for j in self.seeded.jobs]
        return [self.admin_token, *self.seeded.tenants.values(), *agents]


@pytest.fixture(scope="session")
def dashboard(pg_server: str) -> Iterator[Dashboard]:
    """``henge serve --no-scheduler`` (debug logs: every request is logged) on a seeded registry."""
    url = create_database(pg_server, prefix="henge_browser")
    env = {"HENGE_LOG_LEVEL": "debug", "HENGE_ROUND_INTERVAL_S": str(REFRESH_S)}
    try:
        with run_server(url, args=["--no-scheduler"], env=env) as server:
            seeded = seed_registry(
                server.url,
                server.admin_token,
                url,
                tenants=3,
                jobs=SEED_JOBS,
                rounds=SEED_ROUNDS,
                reports_per_job=12,
                bulk_windows_per_job=SEED_ROUNDS,
                with_forecasts=True,
            )
            yield Dashboard(server, seeded, url)
    finally:
        drop_database(pg_server, url)


@pytest.fixture
def context(browser: Any, dashboard: Dashboard) -> Iterator[Any]:
    """A fresh browser profile (no cookies) that records every URL it requests."""
    ctx = browser.new_context(base_url=dashboard.url, viewport={"width": 1400, "height": 900})
    ctx.requested_urls = []
    ctx.on("request", lambda request: ctx.requested_urls.append(request.url))
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: Any) -> Iterator[Any]:
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    yield page
    page.close()


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def sign_in(page: Any, token: str, path: str = "/ui/login") -> None:
    page.goto(path)
    page.fill("#token", token)
    with page.expect_navigation():
        page.click("#sign-in")


def wait_ready(page: Any, loads: int = 1) -> None:
    """Until the page's first data load (or the ``loads``-th) has been rendered."""
    page.wait_for_function(f"() => Number(document.body.dataset.loads || 0) >= {loads}")


def api_get(dashboard: Dashboard, path: str, token: str | None = None, **params: Any) -> Any:
    """What the API answers with a bearer token (the admin's by default): the expected data."""
    headers = {"Authorization": f"Bearer {token or dashboard.admin_token}"}
    answer = httpx.get(f"{dashboard.url}{path}", params=params, headers=headers, timeout=30)
    return answer.raise_for_status().json()


def page_fetch(page: Any, path: str) -> int:
    """The status of a data call made from the page the way its scripts make them."""
    script = """async (path) => (await fetch(path, {credentials: 'same-origin',
        headers: {'X-Henge-Session': '1'}})).status"""
    return int(page.evaluate(script, path))
