"""Posting reports to the scheduler, standard library only: one window to
``POST /v1/jobs/{id}/reports``, several (what could not be delivered earlier) to
``POST /v1/jobs/{id}/reports/batch``."""

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


MAX_BATCH = 100
"""Windows the scheduler takes in one batch."""


@dataclass(frozen=True)
class Answer:
    target_executors: int
    round: int
    duplicate: bool = False
    replace_executors: tuple[str, ...] = ()
    """Executors to stop, a new one started for each (a scheduler without it sends none)."""


@dataclass(frozen=True)
class BatchAnswer:
    target_executors: int
    round: int
    refused: tuple[str, ...]
    """Why each refused window was refused (the others were stored or were already)."""
    replace_executors: tuple[str, ...] = ()


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
        self.batch_endpoint = f"{self.endpoint}/batch"
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        self.timeout_s = timeout_s

    def post(self, report: dict[str, Any]) -> Answer:
        data = self._send(self.endpoint, report)
        try:
            return Answer(
                target_executors=int(data["target_executors"]),
                round=int(data.get("round") or 0),
                duplicate=bool(data.get("duplicate", False)),
                replace_executors=_ids(data),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ReportError(f"unexpected answer {data!r:.200}: {exc}", retry=True) from None

    def post_batch(self, reports: list[dict[str, Any]]) -> BatchAnswer:
        """Post up to :data:`MAX_BATCH` windows, oldest first, in one request."""
        data = self._send(self.batch_endpoint, {"reports": reports[:MAX_BATCH]})
        try:
            results = list(data["results"])
            if len(results) != len(reports[:MAX_BATCH]):
                raise ValueError("one result per window expected")
            refused = tuple(
                json.dumps(r.get("detail"))[:300] for r in results if r["status"] == "rejected"
            )
            return BatchAnswer(
                int(data["target_executors"]), int(data.get("round") or 0), refused, _ids(data)
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ReportError(f"unexpected answer {data!r:.200}: {exc}", retry=True) from None

    def _send(self, url: str, document: dict[str, Any]) -> Any:
        body = json.dumps(document, allow_nan=False, separators=(",", ":")).encode()
        request = urllib.request.Request(url, data=body, headers=self._headers, method="POST")
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
        return data


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


def _ids(data: Any) -> tuple[str, ...]:
    return tuple(str(i) for i in data.get("replace_executors") or ())
