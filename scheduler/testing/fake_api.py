"""A stand-in for ``POST /v1/jobs/{id}/reports`` that tests and the agent benchmark steer and
stop: it records the reports it receives and answers the target they set."""

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
        self.tokens: set[str] = set()
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
                fake.reports.append(body)
                fake.tokens.add(self.headers.get("Authorization", ""))
                if fake.status != 200:
                    answer = json.dumps({"detail": "try later"}).encode()
                    self.send_response(fake.status)
                elif fake.body is not None:
                    answer = fake.body
                    self.send_response(200)
                else:
                    answer = json.dumps(
                        {"target_executors": fake.target, "round": len(fake.reports)}
                    ).encode()
                    self.send_response(200)
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

    def stop(self) -> None:
        """Down: the port refuses connections until :meth:`start` is called again."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
