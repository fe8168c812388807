"""A parallel run's worker starts on the preflight's outcome and adopts what the controller detected
(the conventions, /spec) when a check first asks for it (ProtocolSession.adopt_briefing_later): not
before, once, and without a request of its own."""

from __future__ import annotations

from typing import Any

import httpx

from amp_conformance.amp01.conventions import Conventions
from amp_conformance.amp01.protocol import PROTOCOL
from amp_conformance.engine.configuration import build_options
from amp_conformance.engine.run import Run


def _session(http: httpx.Client) -> Any:
    options = build_options({"amp_base_url": "http://127.0.0.1:9/amp/v1"}, PROTOCOL)
    run = Run(options, PROTOCOL, worker="gw0")
    run.session = PROTOCOL.open_session(run, http=http)
    return run.session


def test_a_worker_adopts_the_detail_when_a_check_first_needs_it() -> None:
    sent: list[httpx.Request] = []
    http = httpx.Client(transport=httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(500)))
    session = _session(http)
    conventions = Conventions(unknown_id=(404, "NOT_FOUND"), deleted_read="hidden")
    fetched: list[int] = []

    def fetch() -> dict[str, Any]:
        fetched.append(1)
        return {
            "spec": {"spec": {"version": "0.1.0"}, "error": None, "status": 200, "transport": False},
            "conventions": conventions.as_wire(),
        }

    session.adopt_briefing_later(fetch)
    assert not fetched, "nothing is read before a check asks"
    assert session.conventions is not None and session.conventions.deleted_read == "hidden"
    assert session.fetch_spec() == {"version": "0.1.0"}
    assert fetched == [1] and not sent
