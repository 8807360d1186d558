"""The dashboard: HTML pages served by the API process under ``/ui``, their scripts, styles and
the vendored chart library under ``/ui/static``, and sessions for the pages' API calls.

    from scheduler.web import mount_dashboard
    mount_dashboard(app)   # by the service, on the API's app
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from scheduler.web import pages
from scheduler.web.sessions import SessionStore

STATIC_DIR = Path(__file__).parent / "static"


def mount_dashboard(app: FastAPI) -> None:
    app.state.web_sessions = SessionStore(app.state.settings.admin_token, clock=app.state.clock)
    app.include_router(pages.router)
    app.mount(pages.STATIC_PREFIX, StaticFiles(directory=STATIC_DIR), name="ui-static")
