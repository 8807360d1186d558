"""No secret in a URL, a page or a log line; the session cookie is HttpOnly and SameSite=Strict
and holds an opaque id, not a token."""

from __future__ import annotations

from typing import Any

from tests.browser.conftest import Dashboard, sign_in, wait_ready

PAGES = ["/ui/", "/ui/jobs", "/ui/rounds", "/ui/login"]


def _visit_everything(page: Any, dashboard: Dashboard, token: str) -> list[str]:
    """Sign in with ``token``, open every page it may see; return each page's HTML and DOM."""
    sign_in(page, token)
    wait_ready(page)
    seen = []
    job = dashboard.seeded.jobs_of("tenant-0")[0]
    for path in [*PAGES, f"/ui/jobs/{job.id}"]:
        page.goto(path)
        if page.locator("body[data-page]").count() and path != "/ui/login":
            page.wait_for_load_state("networkidle")
        seen.append(page.content())
    return seen


def test_no_secret_in_urls_pages_or_logs_and_the_cookie_is_httponly(
    page: Any, context: Any, dashboard: Dashboard
) -> None:
    contents = _visit_everything(page, dashboard, dashboard.admin_token)
    cookies = context.cookies()
    assert len(cookies) == 1
    cookie = cookies[0]
    assert cookie["name"] == "henge_session"
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert cookie["secure"] is False  # plain http on loopback; Secure is set when served over https
    sid = cookie["value"]
    assert len(sid) >= 40 and sid not in dashboard.secrets()
    assert "henge_session" not in page.evaluate("() => document.cookie")

    page.click("#logout")
    contents += _visit_everything(page, dashboard, dashboard.seeded.tenants["tenant-0"])
    sids = [sid, *(c["value"] for c in context.cookies())]

    log = dashboard.server.log_text()
    assert "/ui/login" in log and "web.login" in log  # the log did record the sign-ins
    for secret in [*dashboard.secrets(), *sids]:
        assert not any(secret in url for url in context.requested_urls)
        assert not any(secret in html for html in contents)
        assert secret not in log
