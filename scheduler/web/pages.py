"""The dashboard's pages: sign-in and sign-out, overview, jobs, one job, the rounds log.

Pages are HTML shells; their data comes from the ``/v1`` API, fetched by the page's script with
the session cookie. A page checks only who may see it: the admin's pages refuse tenants (403),
a job page answers 404 for a job its tenant cannot see. The sign-in form posts the token in the
request body; the cookie carries an opaque session id (see :mod:`scheduler.web.sessions`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

import structlog
from fastapi import APIRouter, Depends, Request, Response, status
from fastapi.responses import RedirectResponse
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from scheduler.api import auth
from scheduler.api.auth import SESSION_COOKIE, Principal, Role
from scheduler.api.deps import get_session
from scheduler.registry import repository as repo
from scheduler.registry.tables import Tenant
from scheduler.web.sessions import SessionStore

log = structlog.get_logger("henge.web")

PREFIX = "/ui"
STATIC_PREFIX = f"{PREFIX}/static"
ASSET_VERSION = "1"
MAX_TOKEN_CHARS = 512
MIN_REFRESH_S = 5.0

templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
router = APIRouter(prefix=PREFIX, include_in_schema=False)

# Scripts and styles from this origin only, data calls to this origin only, never framed.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


def _store(request: Request) -> SessionStore:
    store: SessionStore = request.app.state.web_sessions
    return store


def _who(request: Request, session: Session) -> Principal | None:
    return _store(request).lookup(session, request.cookies.get(SESSION_COOKIE))


def _home(who: Principal) -> str:
    return f"{PREFIX}/" if who.role is Role.ADMIN else f"{PREFIX}/jobs"


def _safe_next(target: str | None) -> str | None:
    """Only this dashboard's own paths: never another host, never a protocol-relative URL."""
    if not target or not target.startswith(f"{PREFIX}/") or "//" in target or "\\" in target:
        return None
    return target


def _redirect(location: str) -> RedirectResponse:
    return RedirectResponse(
        location, status.HTTP_303_SEE_OTHER, headers={"Cache-Control": "no-store"}
    )


def _to_login(request: Request) -> RedirectResponse:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return _redirect(f"{PREFIX}/login?next={quote(here, safe='/')}")


def _same_origin(request: Request) -> bool:
    """A browser's POST names its origin (the pages' referrer policy keeps it for this origin);
    another site's, or an origin hidden as "null", is refused."""
    origin = request.headers.get("origin")
    return origin is None or origin == f"{request.url.scheme}://{request.url.netloc}"


def _render(
    request: Request,
    template: str,
    who: Principal | None,
    session: Session | None = None,
    code: int = status.HTTP_200_OK,
    **context: Any,
) -> Response:
    settings = request.app.state.settings
    tenant_name = None
    if who is not None and who.tenant_id is not None and session is not None:
        tenant = session.get(Tenant, who.tenant_id)
        tenant_name = tenant.name if tenant else None
    return templates.TemplateResponse(
        request,
        template,
        {
            "who": who,
            "tenant_name": tenant_name,
            "static": STATIC_PREFIX,
            "version": ASSET_VERSION,
            "refresh_s": max(MIN_REFRESH_S, float(settings.round_interval_s)),
            **context,
        },
        status_code=code,
        headers=SECURITY_HEADERS,
    )


# ---- signing in and out ----------------------------------------------------------------------


@router.get("/login")
def login_page(
    request: Request, next: str | None = None, session: Session = Depends(get_session)
) -> Response:
    who = _who(request, session)
    if who is not None:
        return _redirect(_safe_next(next) or _home(who))
    return _render(request, "login.html", None, next=_safe_next(next) or "", error=None)


@router.post("/login")
async def login(request: Request, session: Session = Depends(get_session)) -> Response:
    if not _same_origin(request):
        return Response("cross-site sign-in refused", status.HTTP_403_FORBIDDEN)
    try:
        form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=4)
    except ValueError:  # more fields than the form has
        form = {}
    token = (form.get("token") or [""])[0].strip()
    target = _safe_next((form.get("next") or [""])[0])
    who = None
    if token and len(token) <= MAX_TOKEN_CHARS:
        who = await run_in_threadpool(auth.identify, session, request, token)
    if who is None or who.role is Role.AGENT:
        log.info("web.login_refused", reason="agent token" if who else "unknown token")
        error = (
            "Agent tokens cannot sign in: use the admin's or your tenant's token."
            if who is not None
            else "That token is not known. Use the admin's token or your tenant's (hgt_…)."
        )
        return _render(
            request,
            "login.html",
            None,
            code=status.HTTP_401_UNAUTHORIZED,
            next=target or "",
            error=error,
        )
    sid = await run_in_threadpool(_store(request).create, session, who, token)
    log.info("web.login", role=who.role.value)
    response = _redirect(target or _home(who))
    response.set_cookie(
        SESSION_COOKIE,
        sid,
        max_age=int(_store(request).ttl_s),
        path="/",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response


@router.post("/logout")
def logout(request: Request, session: Session = Depends(get_session)) -> Response:
    if not _same_origin(request):
        return Response("cross-site sign-out refused", status.HTTP_403_FORBIDDEN)
    _store(request).revoke(session, request.cookies.get(SESSION_COOKIE))
    response = _redirect(f"{PREFIX}/login")
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response


# ---- pages -----------------------------------------------------------------------------------


def _admin_page(request: Request, session: Session, template: str, page: str) -> Response:
    who = _who(request, session)
    if who is None:
        return _to_login(request)
    if who.role is not Role.ADMIN:
        return _render(
            request,
            "refused.html",
            who,
            session,
            code=status.HTTP_403_FORBIDDEN,
            page=page,
            title="Admin only",
            message="This page is the admin's. Tenants see their own jobs.",
        )
    return _render(request, template, who, session, page=page)


@router.get("/")
def overview(request: Request, session: Session = Depends(get_session)) -> Response:
    return _admin_page(request, session, "overview.html", "overview")


@router.get("/rounds")
def rounds_log(request: Request, session: Session = Depends(get_session)) -> Response:
    return _admin_page(request, session, "rounds.html", "rounds")


@router.get("/capacity")
def capacity(request: Request, session: Session = Depends(get_session)) -> Response:
    return _admin_page(request, session, "capacity.html", "capacity")


@router.get("/jobs")
def jobs_table(request: Request, session: Session = Depends(get_session)) -> Response:
    who = _who(request, session)
    if who is None:
        return _to_login(request)
    return _render(request, "jobs.html", who, session, page="jobs")


@router.get("/jobs/{job_id}")
def job_page(job_id: str, request: Request, session: Session = Depends(get_session)) -> Response:
    who = _who(request, session)
    if who is None:
        return _to_login(request)
    try:
        job = repo.visible_job(session, job_id, who.tenant_id)
    except repo.NotFoundError:
        return _render(
            request,
            "refused.html",
            who,
            session,
            code=status.HTTP_404_NOT_FOUND,
            page="jobs",
            title="No such job",
            message="There is no such job.",
        )
    return _render(request, "job.html", who, session, page="job", job_id=job.id, job_name=job.name)


@router.get("", include_in_schema=False)
def bare_prefix() -> Response:
    return _redirect(f"{PREFIX}/")
