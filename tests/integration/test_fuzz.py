"""Fuzzing: every operation of the served OpenAPI document, as the admin, a tenant and an agent,
against a real ``henge serve`` on Postgres. No answer may be a server error or break the
document's own response schema.

Generation is derandomized (the same cases every run); ``FUZZ_EXAMPLES`` cases per operation
make over 1,000 in all, each sent by the three callers. ``henge bench fuzz`` runs the same
checks at a larger count.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from scheduler.bench.fuzz import CALLERS, fuzz, fuzz_target
from tests.conftest import create_database, drop_database
from tests.serving import free_port

FUZZ_EXAMPLES = 90
"""Cases per operation: over 1,000 in all (operations without inputs have one)."""


def test_no_server_error_and_no_answer_outside_the_schema(pg_server: str) -> None:
    url = create_database(pg_server, prefix="henge_fuzz")
    try:
        with fuzz_target(url) as (served, tokens):
            result = fuzz(served, tokens, FUZZ_EXAMPLES)
    finally:
        drop_database(pg_server, url)
    assert not result.failures, "\n\n".join(result.failures)
    assert result.cases >= 1000


def test_the_fuzzer_finds_a_server_error_and_an_answer_outside_the_schema() -> None:
    """The same checks against a tiny app with both faults: each is reported."""
    app = FastAPI()

    class Item(BaseModel):
        size: int

    @app.get("/crash/{n}")
    def crash(n: int) -> dict[str, int]:
        if n < 0:
            raise RuntimeError("boom")  # a server error
        return {"n": n}

    @app.get("/items/{n}", response_model=Item)
    def item(n: int) -> Any:
        return JSONResponse({"size": "large"}) if n > 10 else {"size": n}  # outside the schema

    @app.get("/fine")
    def fine() -> dict[str, int]:
        return {"ok": 1}

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(100):
            if server.started:
                break
            time.sleep(0.05)
        result = fuzz(f"http://127.0.0.1:{port}", dict.fromkeys(CALLERS, "x"), 50)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert result.cases > 2
    crashed, outside = sorted(result.failures)
    assert crashed.startswith("GET /crash/{n}") and "Server error" in crashed
    assert outside.startswith("GET /items/{n}") and "violates schema" in outside
