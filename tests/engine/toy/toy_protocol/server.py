"""The toy protocol's server: a dict behind http.server, on 127.0.0.1. ``TOY_FAULT=put-ignored``
makes PUT answer 204 without storing (the fault the toy checks must catch)."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STORE: dict[str, bytes] = {}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, b'{"status": "ok"}')
        elif self.path.startswith("/kv/") and self.path[4:] in STORE:
            self._send(200, STORE[self.path[4:]])
        else:
            self._send(404, json.dumps({"error": "no such key"}).encode())

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if os.environ.get("TOY_FAULT") != "put-ignored":
            STORE[self.path[4:]] = body
        self._send(204)


def start() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
