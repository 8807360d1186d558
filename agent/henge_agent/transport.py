"""Posting reports to the scheduler (``POST /v1/jobs/{id}/reports``), standard library only."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from henge_agent.settings import DEFAULT_TIMEOUT_S

USER_AGENT = "henge-agent/1"


@dataclass(frozen=True)
class Answer:
    target_executors: int
    round: int
    duplicate: bool = False


class ReportError(Exception):
    """A report was not accepted. ``retry``: worth sending again later (the scheduler is down
    or busy); otherwise the report itself was refused and is dropped."""

    def __init__(self, message: str, *, retry: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.retry = retry
        self.status = status


class ReportClient:
    def __init__(
        self, url: str, job_id: str, token: str, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        base = url.rstrip("/")
        self.endpoint = f"{base}/v1/jobs/{urllib.parse.quote(job_id, safe='')}/reports"
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        self.timeout_s = timeout_s

    def post(self, report: dict[str, Any]) -> Answer:
        body = json.dumps(report, allow_nan=False, separators=(",", ":")).encode()
        request = urllib.request.Request(
            self.endpoint, data=body, headers=self._headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                data = json.loads(response.read().decode())
        except urllib.error.HTTPError as exc:
            detail = _detail(exc)
            status = exc.code
            # 5xx and 429: the scheduler is in trouble, try again. 401/403/404: a wrong token or a
            # deregistered job; keep the executors and keep trying (an admin may fix it). Other
            # 4xx (409 out of order, 413 too large, 422 invalid): this report will never be taken.
            retry = status >= 500 or status in (401, 403, 404, 408, 429)
            raise ReportError(f"HTTP {status}: {detail}", retry=retry, status=status) from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ReportError(f"unreachable: {reason}", retry=True) from None
        except http.client.HTTPException as exc:  # e.g. the connection cut mid-answer
            raise ReportError(f"broken answer: {exc!r}", retry=True) from None
        except ValueError as exc:
            raise ReportError(f"answer is not JSON: {exc}", retry=True) from None
        try:
            return Answer(
                target_executors=int(data["target_executors"]),
                round=int(data.get("round") or 0),
                duplicate=bool(data.get("duplicate", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ReportError(f"unexpected answer {data!r:.200}: {exc}", retry=True) from None


def _detail(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read().decode(errors="replace")
    except OSError:
        return exc.reason or ""
    try:
        detail = json.loads(text).get("detail")
    except (ValueError, AttributeError):
        return text[:300]
    return json.dumps(detail)[:300] if not isinstance(detail, str) else detail[:300]
