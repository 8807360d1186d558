"""Dashboard sessions: an opaque random id in the cookie, the session itself in the registry.

The cookie never carries a token. The registry keeps only the id's SHA-256 digest, whose
principal it is, and a mark of the token it was signed in with, so every replica of the service
sees the same sessions. A session ends after ``ttl_s`` (absolute), at sign-out (on every replica
at once), or when the token it was opened with no longer holds: a tenant whose token was
replaced, or an admin token changed in the settings.

A tenant session's mark is the tenant's token digest, which the registry holds anyway. The
admin's token is chosen by the operator and is never stored, not even as a digest a dump could
be searched against: an admin session's mark is an HMAC of the session's id under a key
stretched from the admin token with scrypt (once per process), so it can neither be forged
without the token nor tested cheaply against guesses.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta

from pydantic import SecretStr
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from scheduler.api.auth import Principal, Role, hash_token
from scheduler.clock import utc_now
from scheduler.registry.tables import DashboardSession, Tenant

DEFAULT_TTL_S = 8 * 3600.0
MAX_SESSIONS = 100
"""Sessions one principal (the admin, or one tenant) keeps at once; past it its oldest end first,
so a flood of sign-ins stays bounded and never ends anyone else's sessions."""
_ADMIN_SALT = b"henge dashboard admin sessions"


class SessionStore:
    def __init__(
        self,
        admin_token: SecretStr | None,
        ttl_s: float = DEFAULT_TTL_S,
        max_sessions: int = MAX_SESSIONS,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.ttl_s = ttl_s
        self._admin_key = (
            hashlib.scrypt(
                admin_token.get_secret_value().encode(), salt=_ADMIN_SALT, n=2**14, r=8, p=1
            )
            if admin_token
            else None
        )
        self._max = max_sessions
        self._clock = clock

    def create(self, session: Session, principal: Principal, token: str) -> str:
        """A new session for ``principal``, signed in with ``token``; returns its id (for the
        cookie only). Commits."""
        sid = secrets.token_urlsafe(32)
        digest = hash_token(sid)
        now = self._clock()
        session.execute(delete(DashboardSession).where(DashboardSession.expires_at <= now))
        same = (
            DashboardSession.role == principal.role.value,
            DashboardSession.tenant_id.is_(None)
            if principal.tenant_id is None
            else DashboardSession.tenant_id == principal.tenant_id,
        )
        kept = session.scalar(select(func.count()).where(*same)) or 0
        if kept >= self._max:
            oldest = (
                select(DashboardSession.id_digest)
                .where(*same)
                .order_by(DashboardSession.created_at, DashboardSession.id_digest)
                .limit(kept - self._max + 1)
            )
            session.execute(delete(DashboardSession).where(DashboardSession.id_digest.in_(oldest)))
        mark = self._admin_mark(digest) if principal.role is Role.ADMIN else hash_token(token)
        session.add(
            DashboardSession(
                id_digest=digest,
                role=principal.role.value,
                tenant_id=principal.tenant_id,
                token_mark=mark or "",
                created_at=now,
                expires_at=now + timedelta(seconds=self.ttl_s),
            )
        )
        session.commit()
        return sid

    def lookup(self, session: Session, sid: str | None) -> Principal | None:
        """Whose session ``sid`` is, while it lasts and its token still holds."""
        if not sid:
            return None
        found = session.execute(
            select(DashboardSession, Tenant.token_hash)
            .outerjoin(Tenant, Tenant.id == DashboardSession.tenant_id)
            .where(DashboardSession.id_digest == hash_token(sid))
        ).first()
        if found is None:
            return None
        row, tenant_digest = found
        if row.expires_at <= self._clock():
            return None
        current = self._admin_mark(row.id_digest) if row.role == Role.ADMIN.value else tenant_digest
        if not current or not hmac.compare_digest(current, row.token_mark):
            return None
        return Principal(Role(row.role), tenant_id=row.tenant_id)

    def _admin_mark(self, id_digest: str) -> str | None:
        """An admin session's mark under the current admin token (``None`` without one)."""
        if self._admin_key is None:
            return None
        return hmac.new(self._admin_key, id_digest.encode(), hashlib.sha256).hexdigest()

    def revoke(self, session: Session, sid: str | None) -> None:
        """End the session ``sid`` (everywhere). Commits."""
        if sid:
            session.execute(
                delete(DashboardSession).where(DashboardSession.id_digest == hash_token(sid))
            )
            session.commit()

    def count(self, session: Session) -> int:
        """Sessions that have not expired (including any whose token no longer holds)."""
        query = select(func.count()).where(DashboardSession.expires_at > self._clock())
        return session.scalar(query) or 0
