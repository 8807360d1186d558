"""A tenant sees its own jobs only, on every page and in every data call the pages make, is
refused the admin's pages, and signs out."""

from __future__ import annotations

from typing import Any

from tests.browser.conftest import (
    Dashboard,
    api_get,
    page_fetch,
    screenshot,
    sign_in,
    wait_ready,
)


def test_a_tenant_sees_only_its_jobs_and_is_refused_the_rest(
    page: Any, dashboard: Dashboard
) -> None:
    seeded = dashboard.seeded
    mine, theirs = seeded.jobs_of("tenant-0"), seeded.jobs_of("tenant-1")
    sign_in(page, seeded.tenants["tenant-0"])
    assert page.url == f"{dashboard.url}/ui/jobs"
    wait_ready(page)
    names = page.evaluate(
        "() => [...document.querySelectorAll('#jobs tbody tr a')].map(a => a.textContent)"
    )
    assert sorted(names) == sorted(j.name for j in mine)
    assert page.locator("nav a[href='/ui/rounds']").count() == 0
    assert page.locator("nav a[href='/ui/']").count() == 0
    screenshot(page, "tenant-jobs")

    page.goto(f"/ui/jobs/{mine[0].id}")
    wait_ready(page)
    history = api_get(dashboard, f"/v1/jobs/{mine[0].id}/history", limit=10_000)["points"]
    assert page.evaluate("() => window.__hengeCharts['job-utility-chart'].points") == len(history)
    assert page.evaluate("() => window.__hengeCharts['job-utility-chart'].markers.length") > 0
    screenshot(page, "tenant-job")

    # Another tenant's job: the page and every data call say there is no such job.
    other = theirs[0].id
    answer = page.goto(f"/ui/jobs/{other}")
    assert answer.status == 404 and page.text_content("h1") == "No such job"
    screenshot(page, "tenant-other-job-refused")
    for path in (f"/v1/jobs/{other}", f"/v1/jobs/{other}/history", f"/v1/jobs/{other}/actions"):
        assert page_fetch(page, path) == 404, path
    # The admin's pages and data.
    for path in ("/ui/", "/ui/rounds"):
        answer = page.goto(path)
        assert answer.status == 403 and page.text_content("h1") == "Admin only", path
    screenshot(page, "tenant-admin-page-refused")
    for path in ("/v1/rounds", "/v1/cluster", "/v1/tenants"):
        assert page_fetch(page, path) == 403, path
    assert page_fetch(page, "/v1/jobs") == 200
    assert page.console_errors == [] or all("403" in e or "404" in e for e in page.console_errors)


def test_signing_out_ends_the_session(page: Any, context: Any, dashboard: Dashboard) -> None:
    sign_in(page, dashboard.seeded.tenants["tenant-1"])
    wait_ready(page)
    assert [c["name"] for c in context.cookies()] == ["henge_session"]
    with page.expect_navigation():
        page.click("#logout")
    assert page.url == f"{dashboard.url}/ui/login"
    assert context.cookies() == []
    screenshot(page, "signed-out")
    assert page_fetch(page, "/v1/jobs") == 401
    page.goto("/ui/jobs")
    assert page.url == f"{dashboard.url}/ui/login?next=/ui/jobs"


def test_an_unknown_token_is_refused_without_being_echoed(page: Any, dashboard: Dashboard) -> None:
    wrong = "hgt_" + "x" * 43
    sign_in(page, wrong)
    assert page.url == f"{dashboard.url}/ui/login"
    assert "not known" in page.text_content("#login-error")
    assert wrong not in page.content()
    assert page.context.cookies() == []
    screenshot(page, "login-refused")
