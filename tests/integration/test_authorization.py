"""Who may call what: every API route of the served app × every kind of caller, on real Postgres.

The answer each caller should get follows from the route itself: the guard it depends on
(:mod:`scheduler.api.auth`) and whether its path names a job. So a new guarded route is covered
without editing this file; a route with no guard the matrix knows fails it, and a route meant
to be public must be listed in :data:`PUBLIC`.

Ids of other tenants never leak: a job that is not yours answers exactly like one that does not
exist.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from httpx import Response
from sqlalchemy.orm import Session

from scheduler.api import auth
from scheduler.api.app import create_app
from scheduler.api.auth import SESSION_COOKIE, SESSION_HEADER
from scheduler.cluster.static import StaticCluster
from scheduler.config import Settings
from scheduler.core.model import InputForecast
from scheduler.registry import forecasts
from scheduler.registry.engine import make_engine
from scheduler.web import mount_dashboard
from tests.conftest import ADMIN, bearer
from tests.integration.test_api import T0, job_body, new_job, new_tenant, report_body

PUBLIC = {("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics")}
"""Routes anyone may call: probes and the Prometheus scrape."""

ADMIN_ONLY, TENANT_ONLY, READER, AGENT = "admin", "tenant", "reader", "agent"
GUARDS: dict[Callable[..., Any], str] = {
    auth.require_admin: ADMIN_ONLY,
    auth.require_tenant: TENANT_ONLY,
    auth.require_reader: READER,
    auth.require_agent: AGENT,
    auth.agent_credentials: AGENT,
}

CALLERS = (
    "nobody",
    "malformed",
    "revoked",
    "admin",
    "tenant-a",
    "tenant-b",
    "agent-a",
    "agent-b",
    "session-a",
    "session-a-no-header",
)
"""``a`` owns the job a route's path names; ``revoked`` is the agent token of a removed job;
``session-*`` is tenant A's dashboard session cookie, with and without the header the API asks
of a cookie."""


@dataclass(frozen=True)
class Served:
    method: str
    path: str
    guard: str | None


def _guard(dependant: Any) -> str | None:
    for sub in dependant.dependencies:
        found = GUARDS.get(sub.call) or _guard(sub)
        if found is not None:
            return found
    return None


def _served_routes() -> list[tuple[Served, bool]]:
    """Every route of the app as the service builds it, and whether it is in the API's schema
    (the dashboard's pages are not); no database is touched."""
    settings = Settings(database_url="sqlite://", admin_token="matrix-admin-token-0123")
    app = create_app(settings, make_engine("sqlite://"), StaticCluster(1, 1, 1024))
    mount_dashboard(app)
    try:  # FastAPI >= 0.16x keeps included routers whole; each context is one route
        from fastapi.routing import iter_route_contexts

        routes: list[Any] = list(iter_route_contexts(app.router.routes))
    except ImportError:
        routes = list(app.routes)
    return [
        (Served(method, route.path, _guard(route.dependant)), bool(route.include_in_schema))
        for route in routes
        if isinstance(getattr(route, "original_route", route), APIRoute)
        for method in sorted(route.methods - {"HEAD", "OPTIONS"})
    ]


SERVED = _served_routes()
ROUTES = [r for r, in_api in SERVED if in_api]
CASES = [(r.method, r.path) for r in ROUTES]
GUARD_OF = {(r.method, r.path): r.guard for r in ROUTES}


def test_every_route_has_a_guard_or_is_public() -> None:
    unguarded = [case for case, guard in GUARD_OF.items() if guard is None and case not in PUBLIC]
    assert not unguarded, f"routes with no guard the matrix knows (add one or list it): {unguarded}"
    # The API as it stands: a shorter list means the enumeration lost routes.
    assert len(CASES) >= 15 and set(CASES) >= PUBLIC


@dataclass
class Cluster:
    """What the callers hold: tenants A and B with a job each, and a removed job's token."""

    api: TestClient
    headers: dict[str, dict[str, str]]
    job_a: str
    job_b: str


@pytest.fixture
def cluster(api: TestClient, db_session: Session) -> Iterator[Cluster]:
    a, b = new_tenant(api, "tenant-a"), new_tenant(api, "tenant-b")
    job_a, job_b = new_job(api, a["token"]), new_job(api, b["token"])
    # (so that every route naming job A has something to answer with)
    steps = (1000.0,) * 60
    forecast = InputForecast(T0, steps, steps, steps, error=0.5, method="daily-profile")
    forecasts.store_forecast(db_session, job_a["id"], forecast, T0)
    gone = new_job(api, a["token"], name="gone")
    assert api.delete(f"/v1/jobs/{gone['id']}", headers=bearer(a["token"])).status_code == 204
    signed_in = api.post("/ui/login", data={"token": a["token"]}, follow_redirects=False)
    sid = signed_in.cookies[SESSION_COOKIE]
    api.cookies.clear()  # each request carries only what its caller holds
    cookie = {"Cookie": f"{SESSION_COOKIE}={sid}"}
    headers = {
        "nobody": {},
        "malformed": {"Authorization": "Bearer this is not a token"},
        "revoked": bearer(gone["agent_token"]),
        "admin": ADMIN,
        "tenant-a": bearer(a["token"]),
        "tenant-b": bearer(b["token"]),
        "agent-a": bearer(job_a["agent_token"]),
        "agent-b": bearer(job_b["agent_token"]),
        "session-a": {**cookie, SESSION_HEADER: "1"},
        "session-a-no-header": cookie,
    }
    yield Cluster(api, headers, job_a["id"], job_b["id"])


def _body(method: str, path: str) -> Any:
    """A valid body for the routes that take one (an unknown route gets an empty object)."""
    if method == "POST" and path == "/v1/tenants":
        return {"name": f"t-{uuid.uuid4().hex[:8]}"}
    if method == "POST" and path == "/v1/jobs":
        return job_body(name=f"j-{uuid.uuid4().hex[:8]}")
    if method == "PATCH" and path == "/v1/jobs/{job_id}":
        return {"priority": 40}
    if method == "POST" and path.endswith("/reports"):
        return report_body(T0 + timedelta(minutes=1))
    if method == "POST" and path.endswith("/reports/batch"):
        return {"reports": [report_body(T0 + timedelta(minutes=2))]}
    return {} if method in ("POST", "PUT", "PATCH") else None


def _call(cluster: Cluster, method: str, path: str, caller: str, job_id: str) -> Response:
    url = path.replace("{job_id}", job_id)
    body = _body(method, path)
    return cluster.api.request(method, url, json=body, headers=cluster.headers[caller])


def _acting_as(caller: str, method: str) -> str | None:
    """The principal a caller's credentials stand for on this method (``None``: nobody)."""
    if caller in ("nobody", "malformed", "revoked", "session-a-no-header"):
        return None
    if caller == "session-a":
        return "tenant-a" if method == "GET" else None  # a cookie is taken on GET only
    return caller


def _expected(guard: str | None, names_job: bool, method: str, caller: str) -> int | str:
    """The status the caller should get, or ``"ok"`` (a 2xx) when it may act."""
    if guard is None:
        return "ok"
    who = _acting_as(caller, method)
    if who is None:
        return 401
    role = who.split("-")[0]
    allowed = {
        ADMIN_ONLY: {"admin"},
        TENANT_ONLY: {"tenant"},
        READER: {"admin", "tenant"},
        AGENT: {"agent"},
    }[guard]
    if role not in allowed:
        return 403
    # The path names tenant A's job: anyone but A (and the admin) finds no such job.
    if names_job and who.endswith("-b"):
        return 404
    return "ok"


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize(("method", "path"), CASES, ids=[f"{m} {p}" for m, p in CASES])
def test_each_caller_gets_the_intended_answer(
    cluster: Cluster, method: str, path: str, caller: str
) -> None:
    expected = _expected(GUARD_OF[method, path], "{job_id}" in path, method, caller)
    answer = _call(cluster, method, path, caller, cluster.job_a)
    if expected == "ok":
        assert 200 <= answer.status_code < 300, (caller, answer.status_code, answer.text)
    else:
        assert answer.status_code == expected, (caller, answer.status_code, answer.text)
    if answer.status_code == 401:
        assert answer.headers.get("www-authenticate") == "Bearer"


JOB_CASES = [(m, p) for m, p in CASES if "{job_id}" in p]


@pytest.mark.parametrize(("method", "path"), JOB_CASES, ids=[f"{m} {p}" for m, p in JOB_CASES])
def test_another_tenants_job_answers_exactly_like_a_missing_one(
    cluster: Cluster, method: str, path: str
) -> None:
    caller = "agent-a" if GUARD_OF[method, path] == AGENT else "tenant-a"
    missing = _call(cluster, method, path, caller, "0" * 32)
    not_yours = _call(cluster, method, path, caller, cluster.job_b)
    assert missing.status_code == not_yours.status_code == 404
    assert missing.json() == not_yours.json()
    assert cluster.job_b not in not_yours.text


# ---- the dashboard's pages -------------------------------------------------------------------

SIGNED_IN, ADMIN_PAGE, ANYONE = "signed-in", "admin-page", "anyone"
PAGES = {
    ("GET", "/ui"): (ANYONE, 303),
    ("GET", "/ui/login"): (ANYONE, 200),
    ("POST", "/ui/login"): (ANYONE, 401),
    ("POST", "/ui/logout"): (ANYONE, 303),
    ("GET", "/ui/"): (ADMIN_PAGE, 200),
    ("GET", "/ui/rounds"): (ADMIN_PAGE, 200),
    ("GET", "/ui/capacity"): (ADMIN_PAGE, 200),
    ("GET", "/ui/jobs"): (SIGNED_IN, 200),
    ("GET", "/ui/jobs/{job_id}"): (SIGNED_IN, 200),
}
"""Each page and who may see it. Pages read the session cookie only (never a bearer token, and
without the API's header): everyone else is sent to sign in. ``ANYONE`` pages answer every
caller alike: the bare prefix redirects, a sign-in without a token is refused, a sign-out
always ends at the sign-in page."""

PAGE_CASES = [(r.method, r.path) for r, in_api in SERVED if not in_api]


def test_every_page_is_in_the_matrix() -> None:
    assert set(PAGE_CASES) == set(PAGES), "list a new page in PAGES with who may see it"


def _page_expected(rule: str, ok: int, method: str, path: str, caller: str) -> int:
    signed_in = caller.startswith("session-")
    if rule == ANYONE:
        if (method, path) == ("GET", "/ui/login") and signed_in:
            return 303  # already signed in: on to the home page
        return ok
    if not signed_in:
        return 303
    return 403 if rule == ADMIN_PAGE else ok  # tenant A's session on the admin's pages


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize(("method", "path"), PAGE_CASES, ids=[f"{m} {p}" for m, p in PAGE_CASES])
def test_each_caller_gets_the_intended_page(
    cluster: Cluster, method: str, path: str, caller: str
) -> None:
    rule, ok = PAGES[method, path]
    url = path.replace("{job_id}", cluster.job_a)
    answer = cluster.api.request(
        method, url, headers=cluster.headers[caller], follow_redirects=False
    )
    assert answer.status_code == _page_expected(rule, ok, method, path, caller), answer.text
    if answer.status_code == 303 and rule != ANYONE and method == "GET":
        assert answer.headers["location"].startswith("/ui/login?next=")


def test_another_tenants_job_page_answers_like_a_missing_one(cluster: Cluster) -> None:
    headers = cluster.headers["session-a"]
    missing = cluster.api.get(f"/ui/jobs/{'0' * 32}", headers=headers)
    not_yours = cluster.api.get(f"/ui/jobs/{cluster.job_b}", headers=headers)
    assert missing.status_code == not_yours.status_code == 404
    assert missing.text == not_yours.text and cluster.job_b not in not_yours.text
