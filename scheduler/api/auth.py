"""Bearer tokens: admin (from settings), tenant (one per tenant), agent (one per job).

Tokens are random, shown once, and stored only as SHA-256 digests (they carry 256 bits of
randomness, so a fast hash is enough). Lookups go by digest; the admin token is compared with
``hmac.compare_digest``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from enum import StrEnum

import structlog
from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import select
from sqlalchemy.orm import Session

from scheduler.api.deps import get_session
from scheduler.registry.tables import Job, Tenant

TENANT_PREFIX = "hgt_"
AGENT_PREFIX = "hga_"


class Role(StrEnum):
    ADMIN = "admin"
    TENANT = "tenant"
    AGENT = "agent"


@dataclass(frozen=True)
class Principal:
    role: Role
    tenant_id: str | None = None
    job_id: str | None = None


def new_token(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


bearer_scheme = HTTPBearer(auto_error=False)


def unauthorized(message: str) -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED, message, headers={"WWW-Authenticate": "Bearer"}
    )


def identify(session: Session, request: Request, token: str) -> Principal | None:
    """Whose token this is, or None when nobody's."""
    admin = request.app.state.settings.admin_token
    if admin is not None and hmac.compare_digest(token.encode(), admin.get_secret_value().encode()):
        return Principal(Role.ADMIN)
    digest = hash_token(token)
    if token.startswith(TENANT_PREFIX):
        tenant_id = session.scalar(select(Tenant.id).where(Tenant.token_hash == digest))
        if tenant_id is not None:
            structlog.contextvars.bind_contextvars(tenant=tenant_id)
            return Principal(Role.TENANT, tenant_id=tenant_id)
    elif token.startswith(AGENT_PREFIX):
        # A removed job's token is revoked with it.
        job_id = session.scalar(
            select(Job.id).where(Job.agent_token_hash == digest, Job.status != "removed")
        )
        if job_id is not None:
            structlog.contextvars.bind_contextvars(job=job_id)
            return Principal(Role.AGENT, job_id=job_id)
    return None


# The dashboard's session (scheduler/web): an opaque id in an HttpOnly cookie, mapped in the
# registry to a principal. Accepted for GET only and with the custom header, which a cross-site
# form or image cannot send (and a cross-site fetch could only after a CORS preflight nobody
# answers).
SESSION_COOKIE = "henge_session"
SESSION_HEADER = "X-Henge-Session"


def session_principal(request: Request, session: Session) -> Principal | None:
    """The dashboard session's principal, for a GET carrying the session header, else None."""
    store = getattr(request.app.state, "web_sessions", None)
    sid = request.cookies.get(SESSION_COOKIE)
    if store is None or not sid or request.method != "GET":
        return None
    if request.headers.get(SESSION_HEADER) != "1":
        return None
    who: Principal | None = store.lookup(session, sid)
    if who is not None and who.tenant_id is not None:
        structlog.contextvars.bind_contextvars(tenant=who.tenant_id)
    return who


def principal(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme),
    session: Session = Depends(get_session),
) -> Principal:
    """Who is calling, from the bearer token (or the dashboard's session cookie on a GET); 401
    when there is none or it is unknown."""
    if credentials is None or not credentials.credentials:
        who = session_principal(request, session)
        if who is None:
            raise unauthorized("missing bearer token")
        return who
    who = identify(session, request, credentials.credentials)
    if who is None:
        raise unauthorized("unknown token")
    return who


async def agent_credentials(
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer_scheme),
) -> HTTPAuthorizationCredentials | None:
    """The bearer credentials, unchecked, for a route that checks an agent's token in its own
    handler (the report route authenticates and loads the job in one query). Using it promises
    :func:`require_agent`'s answers; the authorization matrix holds every such route to them."""
    return credentials


def require_admin(who: Principal = Depends(principal)) -> Principal:
    if who.role is not Role.ADMIN:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "admin token required")
    return who


def require_tenant(who: Principal = Depends(principal)) -> Principal:
    if who.role is not Role.TENANT:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "tenant token required")
    return who


def require_reader(who: Principal = Depends(principal)) -> Principal:
    """Tenants (their own jobs) and the admin (all jobs); agents only post reports."""
    if who.role is Role.AGENT:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "agent tokens can only post reports")
    return who


def require_agent(who: Principal = Depends(principal)) -> Principal:
    if who.role is not Role.AGENT:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "agent token required")
    return who
