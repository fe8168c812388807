"""A broken attempt of an open route's GET is never judged (issue 36): the checks of ``/health`` and
``/spec`` judge the attempt that answered, never the one a reset cut (which read as "answered 0")."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from amp_conformance.amp01.session import Amp01Session
from amp_conformance.cli import run_suite
from amp_conformance.engine.inprocess import ASGITransport, in_process_client
from reference_server import Settings, create_app
from tests.suite.inprocess import BASE_URL
from tests.suite.test_requests_not_repeated import OPEN_ROUTE_CHECKS


class _FirstAttemptsReset(httpx.BaseTransport):
    """Resets every other anonymous ``GET /spec`` before it reaches the app (each request's first
    attempt; its repeat goes through)."""

    def __init__(self, inner: httpx.BaseTransport):
        self.inner = inner
        self.spec_gets = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path.endswith("/spec"):
            self.spec_gets += 1
            if self.spec_gets % 2 == 1:
                raise httpx.ReadError("[Errno 104] Connection reset by peer", request=request)
        return self.inner.handle_request(request)


@pytest.mark.parametrize("own_gets", [True, False], ids=["session-sent", "checks-sent"])
def test_the_open_route_checks_pass_when_a_spec_get_was_reset_and_repeated(
    own_gets: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not own_gets:  # as a parallel run's worker: the checks send their own GETs
        monkeypatch.setattr(Amp01Session, "open_route", lambda self, path: None)
    app = create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false"}))
    transport = _FirstAttemptsReset(ASGITransport(app))
    values: dict[str, Any] = {"amp_base_url": BASE_URL, "amp_only": "health,cap,auth", "amp_no_fuzz": True}
    values |= {"amp_timeout": 10.0, "keyword": " or ".join(OPEN_ROUTE_CHECKS)}
    with in_process_client(transport, BASE_URL) as http:
        outcome = run_suite(values, http=http, quiet=True)
    assert outcome.run is not None and transport.spec_gets >= 2
    results = {r.name: r for r in outcome.run.results.values()}
    assert sorted(results) == sorted(OPEN_ROUTE_CHECKS)
    assert all(r.outcome == "pass" for r in results.values()), {n: r.message for n, r in results.items()}
