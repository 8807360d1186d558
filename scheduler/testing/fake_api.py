"""A stand-in for ``POST /v1/jobs/{id}/reports`` and ``…/reports/batch`` that tests and the agent
benchmark steer and stop: it records the reports it receives and answers the target they set."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeScheduler:
    def __init__(self, target: int, port: int = 0) -> None:
        self.target = target
        self.status = 200
        self.body: bytes | None = None
        """Answer this instead (status 200): a scheduler or proxy answering nonsense."""
        self.cut_short = False
        """Announce a longer answer than is sent, then hang up (a connection cut mid-answer)."""
        self.reports: list[dict[str, Any]] = []
        """Every window received, in order (a batch's one by one)."""
        self.paths: list[str] = []
        """The path of every request."""
        self.batch_route = True
        """False: a scheduler from before the batch route (404 there)."""
        self.refuse: set[str] = set()
        """Window ends a batch answer refuses."""
        self.tokens: set[str] = set()
        self.replace: list[str] = []
        """Executors every answer asks the agent to replace."""
        self._port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> FakeScheduler:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.paths.append(self.path)
                fake.tokens.add(self.headers.get("Authorization", ""))
                batch = self.path.endswith("/reports/batch")
                if batch and not fake.batch_route:
                    answer = json.dumps({"detail": "Not Found"}).encode()
                    self.send_response(404)
                    self._finish(answer)
                    return
                fake.reports.extend(body["reports"] if batch else [body])
                if fake.status != 200:
                    answer = json.dumps({"detail": "try later"}).encode()
                    self.send_response(fake.status)
                elif fake.body is not None:
                    answer = fake.body
                    self.send_response(200)
                else:
                    reply: dict[str, Any] = {
                        "target_executors": fake.target,
                        "round": len(fake.reports),
                        "replace_executors": list(fake.replace),
                    }
                    if batch:
                        reply["results"] = [fake.result(r) for r in body["reports"]]
                    answer = json.dumps(reply).encode()
                    self.send_response(200)
                self._finish(answer)

            def _finish(self, answer: bytes) -> None:
                announced = len(answer) + (100 if fake.cut_short else 0)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(announced))
                if fake.cut_short:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(answer)
                if fake.cut_short:
                    self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def result(self, report: dict[str, Any]) -> dict[str, Any]:
        if report.get("window_end") in self.refuse:
            return {"status": "rejected", "detail": [{"loc": ["window_end"], "msg": "refused"}]}
        return {"status": "stored", "window_end": report.get("window_end")}

    def stop(self) -> None:
        """Down: the port refuses connections until :meth:`start` is called again."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
