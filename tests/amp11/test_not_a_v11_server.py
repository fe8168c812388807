"""``--protocol amp-1.1`` at something that is no AMP v1.1 server is one line and exit 2 (issue 38
item 4), as AMP v0.1.0's preflight does: not 35 MUST failures and exit 1."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from amp_conformance.amp01.selfserve import BundledServer
from amp_conformance.cli import main


class _Always500(http.server.BaseHTTPRequestHandler):
    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self.send_response(500)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", "21")
        self.end_headers()
        self.wfile.write(b"Internal Server Error")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, *_: object) -> None:
        return None


class _Files(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        return None


def _serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["http.server", "always-500", "amp-0.1"])
def not_v11(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "amp-0.1":
        with BundledServer({"AMP_LIFECYCLE_ENABLED": "false"}) as server:
            yield server.url
        return
    yield from _serving(_Files if request.param == "http.server" else _Always500)


def test_a_server_that_is_no_v11_server_is_refused_in_one_line(
    not_v11: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--protocol", "amp-1.1", "--base-url", not_v11, "-q"]) == 2
    captured = capsys.readouterr()
    said = [line for line in captured.err.splitlines() if "not an AMP v1.1 server" in line]
    assert len(said) == 1, captured.out[-2000:] + captured.err[-2000:]
    assert "MUST check(s) failed" not in captured.out


def test_a_v01_app_is_refused_too(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--protocol", "amp-1.1", "--app", "reference_server.amp01.app:default_app", "-q"])
    captured = capsys.readouterr()
    assert code == 2, captured.out[-2000:]
    assert "not an AMP v1.1 server" in captured.err + captured.out
