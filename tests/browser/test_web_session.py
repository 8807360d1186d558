"""The dashboard's session (no browser needed): sign-in by form, the cookie, the API's cookie
fallback (GET with the session header only), expiry, sign-out and the job actions call."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from scheduler.api.app import create_app
from scheduler.api.auth import SESSION_COOKIE, SESSION_HEADER, Principal, Role, hash_token
from scheduler.api.deps import get_session
from scheduler.cluster.static import StaticCluster
from scheduler.registry.tables import Action, DashboardSession, Round, Tenant
from scheduler.web import mount_dashboard
from scheduler.web.sessions import SessionStore
from tests.conftest import ADMIN, ADMIN_TOKEN, FixedClock, bearer, make_settings

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

HEADER = {SESSION_HEADER: "1"}


def _tenant(api: TestClient, name: str) -> str:
    answer = api.post("/v1/tenants", json={"name": name}, headers=ADMIN)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["token"])


def _job(api: TestClient, token: str, name: str = "pageload") -> dict[str, Any]:
    body = {"name": name, "priority": 35, "slo": {"latency_ms": 60}}
    answer = api.post("/v1/jobs", json=body, headers=bearer(token))
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def _sign_in(api: TestClient, token: str, next_path: str = "") -> Any:
    return api.post("/ui/login", data={"token": token, "next": next_path}, follow_redirects=False)


def test_sign_in_sets_an_httponly_strict_cookie_with_an_opaque_id(api: TestClient) -> None:
    answer = _sign_in(api, ADMIN_TOKEN)
    assert answer.status_code == 303 and answer.headers["location"] == "/ui/"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/", "Max-Age="):
        assert attribute.lower() in cookie.lower()
    assert "secure" not in cookie.lower()  # plain http here; https requests get Secure
    assert ADMIN_TOKEN not in cookie and ADMIN_TOKEN not in answer.headers["location"]


def test_the_api_takes_the_cookie_only_on_get_with_the_session_header(api: TestClient) -> None:
    tenant = _tenant(api, "ads")
    _job(api, tenant)
    assert _sign_in(api, tenant).status_code == 303
    assert api.get("/v1/jobs", headers=HEADER).status_code == 200
    assert len(api.get("/v1/jobs", headers=HEADER).json()) == 1
    # Without the header (what a cross-site form or image would send) the cookie is not enough.
    assert api.get("/v1/jobs").status_code == 401
    # Nor for anything that changes state.
    body = {"name": "other", "priority": 5, "slo": {"latency_ms": 60}}
    assert api.post("/v1/jobs", json=body, headers=HEADER).status_code == 401
    # A bearer token still wins over the cookie.
    assert api.get("/v1/rounds", headers={**HEADER, **ADMIN}).status_code == 200
    assert api.get("/v1/rounds", headers=HEADER).status_code == 403


def test_a_tenants_session_sees_its_own_jobs_only(api: TestClient) -> None:
    mine, theirs = _tenant(api, "ads"), _tenant(api, "fraud")
    own, other = _job(api, mine), _job(api, theirs)
    _sign_in(api, mine)
    assert [j["id"] for j in api.get("/v1/jobs", headers=HEADER).json()] == [own["id"]]
    for suffix in ("", "/history", "/actions"):
        assert api.get(f"/v1/jobs/{other['id']}{suffix}", headers=HEADER).status_code == 404
        assert api.get(f"/v1/jobs/{own['id']}{suffix}", headers=HEADER).status_code == 200
    assert api.get("/ui/rounds").status_code == 403
    assert api.get(f"/ui/jobs/{other['id']}").status_code == 404


def test_wrong_and_agent_tokens_do_not_sign_in(api: TestClient) -> None:
    tenant = _tenant(api, "ads")
    agent = _job(api, tenant)["agent_token"]
    for token in ("hgt_unknown", agent, ""):
        answer = _sign_in(api, token)
        assert answer.status_code == 401 and "set-cookie" not in answer.headers
        assert not token or token not in answer.text
    stuffed = {f"f{i}": "x" for i in range(10)} | {"token": ADMIN_TOKEN}
    assert api.post("/ui/login", data=stuffed, follow_redirects=False).status_code == 401


def test_cross_site_sign_in_and_out_are_refused(api: TestClient) -> None:
    for origin in ("https://evil.example", "null"):
        answer = api.post(
            "/ui/login",
            data={"token": ADMIN_TOKEN},
            headers={"Origin": origin},
            follow_redirects=False,
        )
        assert answer.status_code == 403 and "set-cookie" not in answer.headers
    answer = api.post(
        "/ui/login",
        data={"token": ADMIN_TOKEN},
        headers={"Origin": "http://testserver"},
        follow_redirects=False,
    )
    assert answer.status_code == 303
    assert api.post("/ui/logout", headers={"Origin": "https://evil.example"}).status_code == 403
    assert api.get("/v1/cluster", headers=HEADER).status_code == 200


def test_sign_out_revokes_the_session(api: TestClient, db_session: Session) -> None:
    _sign_in(api, ADMIN_TOKEN)
    sid = api.cookies[SESSION_COOKIE]
    assert api.post("/ui/logout", follow_redirects=False).status_code == 303
    store = api.app.state.web_sessions  # type: ignore[attr-defined]
    assert store.lookup(db_session, sid) is None
    api.cookies.set(SESSION_COOKIE, sid)  # replaying the old cookie does not help
    assert api.get("/v1/cluster", headers=HEADER).status_code == 401
    assert api.get("/ui/", follow_redirects=False).headers["location"] == "/ui/login?next=/ui/"


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/ui/", "/v1/rounds"])
def test_sign_in_redirects_only_to_dashboard_pages(api: TestClient, target: str) -> None:
    assert _sign_in(api, ADMIN_TOKEN, target).headers["location"] == "/ui/"


def _tenant_row(db_session: Session, token: str) -> str:
    tenant = Tenant(id=f"t-{uuid.uuid4().hex[:8]}", name=uuid.uuid4().hex[:12],
                    token_hash=hash_token(token), created_at=T0)  # fmt: skip
    db_session.add(tenant)
    db_session.flush()
    return tenant.id


def test_sessions_expire_and_store_no_token(db_session: Session) -> None:
    now = [T0]
    store = SessionStore(SecretStr(ADMIN_TOKEN), ttl_s=60, clock=lambda: now[0])
    who = Principal(Role.TENANT, tenant_id=_tenant_row(db_session, "hgt_one"))
    sid = store.create(db_session, who, "hgt_one")
    assert store.lookup(db_session, sid) == who and store.lookup(db_session, "forged") is None
    stored = db_session.scalars(select(DashboardSession)).all()
    assert [r.id_digest for r in stored] == [hash_token(sid)]  # kept by digest only
    assert all(sid not in str(vars(r)) and "hgt_one" not in str(vars(r)) for r in stored)
    now[0] += timedelta(seconds=61)
    assert store.lookup(db_session, sid) is None and store.count(db_session) == 0


def test_a_flood_of_sign_ins_ends_only_the_same_principals_oldest_sessions(
    db_session: Session,
) -> None:
    now = [T0]
    store = SessionStore(SecretStr(ADMIN_TOKEN), max_sessions=2, clock=lambda: now[0])
    tenant = Principal(Role.TENANT, tenant_id=_tenant_row(db_session, "hgt_flood"))
    admin = store.create(db_session, Principal(Role.ADMIN), ADMIN_TOKEN)
    sids = []
    for _ in range(3):
        now[0] += timedelta(seconds=1)
        sids.append(store.create(db_session, tenant, "hgt_flood"))
    assert store.count(db_session) == 3 and store.lookup(db_session, sids[0]) is None
    assert store.lookup(db_session, sids[2]) == tenant
    assert store.lookup(db_session, admin) == Principal(Role.ADMIN)  # another principal's


def test_the_admin_token_is_not_stored_in_any_form_a_dump_could_be_searched_with(
    db_session: Session,
) -> None:
    store = SessionStore(SecretStr(ADMIN_TOKEN), clock=lambda: T0)
    sid = store.create(db_session, Principal(Role.ADMIN), ADMIN_TOKEN)
    (row,) = db_session.scalars(select(DashboardSession)).all()
    stored = str(vars(row))
    assert ADMIN_TOKEN not in stored and hash_token(ADMIN_TOKEN) not in stored
    # A row copied under another id is no session: its mark is bound to its own id.
    db_session.add(DashboardSession(id_digest=hash_token("forged"), role="admin", tenant_id=None,
                                    token_mark=row.token_mark, created_at=T0,
                                    expires_at=row.expires_at))  # fmt: skip
    db_session.flush()
    assert store.lookup(db_session, "forged") is None
    assert store.lookup(db_session, sid) == Principal(Role.ADMIN)


def test_a_session_ends_when_the_token_it_was_opened_with_no_longer_holds(
    db_session: Session,
) -> None:
    store = SessionStore(SecretStr(ADMIN_TOKEN), clock=lambda: T0)
    tenant_id = _tenant_row(db_session, "hgt_old")
    sid = store.create(db_session, Principal(Role.TENANT, tenant_id=tenant_id), "hgt_old")
    admin_sid = store.create(db_session, Principal(Role.ADMIN), ADMIN_TOKEN)
    assert store.lookup(db_session, sid) is not None
    db_session.get(Tenant, tenant_id).token_hash = hash_token("hgt_new")  # type: ignore[union-attr]
    db_session.flush()
    assert store.lookup(db_session, sid) is None
    # Another replica, or a restart, with a new admin token: the admin's sessions are over.
    assert store.lookup(db_session, admin_sid) == Principal(Role.ADMIN)
    changed = SessionStore(SecretStr("another-admin-token-0123456789"), clock=lambda: T0)
    assert changed.lookup(db_session, admin_sid) is None


def test_job_actions_lists_the_rounds_that_changed_the_job(
    api: TestClient, db_session: Session
) -> None:
    tenant = _tenant(api, "ads")
    job, other = _job(api, tenant), _job(api, tenant, "clicks")
    start = datetime(2026, 1, 1, 12, tzinfo=UTC)
    for n, job_id in enumerate([job["id"], other["id"], job["id"]], start=1):
        at = start + timedelta(seconds=10 * n)
        row = Round(
            number=n,
            started_at=at,
            finished_at=at,
            policy="henge",
            state="converged",
            action="reconfigure",
            job_id=job_id,
            reason="r",
            total_utility=1,
            max_utility=1,
        )
        db_session.add(row)
        db_session.flush()
        db_session.add(
            Action(
                round_id=row.id,
                kind="reconfigure",
                job_id=job_id,
                from_executors=n,
                to_executors=n + 1,
                reason="r",
            )
        )
    db_session.flush()
    actions = api.get(f"/v1/jobs/{job['id']}/actions", headers=bearer(tenant)).json()
    assert [(a["round"], a["from_executors"], a["to_executors"]) for a in actions] == [
        (3, 3, 4),
        (1, 1, 2),
    ]
    since = (start + timedelta(seconds=25)).isoformat()
    ranged = api.get(f"/v1/jobs/{job['id']}/actions", params={"since": since}, headers=ADMIN)
    assert [a["round"] for a in ranged.json()] == [3]


def test_a_session_holds_on_every_replica_and_sign_out_ends_it_on_all(
    api: TestClient, pg_url: str, pg_engine: Engine, db_session: Session, clock: FixedClock
) -> None:
    other = create_app(make_settings(pg_url), pg_engine, StaticCluster(4, 8, 32768), clock=clock)
    mount_dashboard(other)  # a second replica: its own process memory, the same registry
    other.dependency_overrides[get_session] = lambda: db_session
    tenant = _tenant(api, "ads")
    _job(api, tenant)
    assert _sign_in(api, tenant).status_code == 303
    cookie = {SESSION_COOKIE: api.cookies[SESSION_COOKIE]}
    with TestClient(other, cookies=cookie) as replica:
        assert len(replica.get("/v1/jobs", headers=HEADER).json()) == 1
        assert replica.get("/ui/jobs", follow_redirects=False).status_code == 200
        assert replica.post("/ui/logout", follow_redirects=False).status_code == 303
    assert api.get("/v1/jobs", headers=HEADER).status_code == 401
    assert api.get("/ui/jobs", follow_redirects=False).status_code == 303
