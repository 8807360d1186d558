"""``henge demo --serve`` on the embedded defaults (SQLite, simulated cluster) prints the
dashboard's URL and serves it, with the demo's rounds, until interrupted."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from scheduler.bench.server import henge_command
from tests.browser.conftest import screenshot, sign_in, wait_ready

DEMO_ROUNDS = 270  # 45 simulated minutes, a round every 10 s (as tests/integration/test_demo.py)


def _wait_for_dashboard(process: subprocess.Popen[str], timeout_s: float = 240) -> str:
    assert process.stdout is not None
    seen = ""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(
                f"henge demo ended (code {process.wait()}) before serving:\n{seen}"
            )
        seen += line
        if line.startswith("Dashboard: "):
            return seen
    raise AssertionError(f"no dashboard URL after {timeout_s} s:\n{seen}")


def _exit_code(process: subprocess.Popen[str], timeout_s: float) -> int:
    """The process's exit code, reading what it still prints (a full pipe would block its
    exit); if it has not exited in time, fail with where its threads are."""
    try:
        process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)  # the fault handler prints every thread's stack
        dump, _ = process.communicate(timeout=10)
        raise AssertionError(f"the demo did not stop within {timeout_s} s:\n{dump}") from None
    return process.returncode


def test_demo_serves_the_dashboard_until_interrupted(browser: Any) -> None:
    # PYTHONFAULTHANDLER: a demo that does not stop can be made to print where its threads are.
    env = {**os.environ, "COLUMNS": "250", "PYTHONFAULTHANDLER": "1"}
    # As from a terminal: a suite started in the background has SIGINT ignored, which a child
    # inherits and keeps (the demo would ignore the Ctrl-C this test sends); a handled SIGINT
    # is reset to the default in the child instead.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    process = subprocess.Popen(
        [*henge_command(), "demo", "--serve"],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    signal.signal(signal.SIGINT, previous)
    data_dir = None
    try:
        output = _wait_for_dashboard(process)
        url = re.search(r"Dashboard: (http://127\.0\.0\.1:\d+)/ui/", output)
        token_file = re.search(r"the admin token is in (\S+)", output)
        assert url and token_file, output
        token_path = Path(token_file.group(1))
        data_dir = token_path.parent
        token = token_path.read_text()
        assert token not in output  # printed where it is, never itself

        context = browser.new_context(
            base_url=url.group(1), viewport={"width": 1400, "height": 900}
        )
        page = context.new_page()
        sign_in(page, token)
        wait_ready(page)
        drawn = page.evaluate("() => window.__hengeCharts['utility-chart']")
        assert drawn["points"] == DEMO_ROUNDS
        labels = {m["label"] for m in drawn["markers"]}
        assert {"pageload", "clicks", "wordcount", "fraud"} <= {
            job for label in labels for job in label.split(", ")
        }
        screenshot(page, "demo-overview")
        context.close()

        process.send_signal(signal.SIGINT)
        assert _exit_code(process, timeout_s=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if data_dir is not None and data_dir.name.startswith("henge-demo-"):
            shutil.rmtree(data_dir, ignore_errors=True)
