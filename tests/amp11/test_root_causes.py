"""Issue 19: AMP v1.1 checks get v0.1's root-cause discipline from the one engine.

A REST server whose ``amp.stats`` route fails (HTTP 500, not an AMP error) breaks AMP11-STAT-01: the
checks citing it fail; every other check that counts memories as a step is ``blocked`` under it (never
failed under its own requirement); and the 500 is a warning under a v1.1 requirement (AMP11-REST-11),
never v0.1's AMP-ERR-07.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from starlette.types import Receive, Scope, Send

from amp_conformance.amp11.session import Amp11Target
from tests.amp11.harness import StreamingASGITransport, run_checks


@contextmanager
def stats_broken() -> Iterator[Amp11Target]:
    from reference_server.amp11 import Faults, Store, create_rest_app

    inner = create_rest_app(Store(), Faults.parse(""))

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/v1/memories/stats":
            body = b'{"detail": "stats exploded"}'
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 500, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await inner(scope, receive, send)

    http = httpx.Client(transport=StreamingASGITransport(app))
    try:
        yield Amp11Target(base_url="http://amp11.test", http=http, timeout=5.0)
    finally:
        http.close()


def test_a_broken_step_fails_its_requirement_once_and_blocks_the_rest() -> None:
    with stats_broken() as target:
        collector = run_checks(target)
    results = collector.results
    assert results
    failed = {name: o for name, o in results.items() if o.outcome == "failed"}
    blocked = {name: o for name, o in results.items() if o.outcome == "blocked"}
    assert results["test_stats_shape"].outcome == "failed"  # the check asking about amp.stats itself
    # a check that only counted memories as a step is blocked under the step, never failed
    assert not [name for name, o in failed.items() if "(precondition)" in o.message], failed
    assert {"test_stats_follows_encode_and_forget", "test_stats_counts_only_its_scope"} <= set(blocked)
    for name, outcome in blocked.items():
        assert outcome.blocked_by is not None and outcome.blocked_by["requirement"] == "AMP11-STAT-01", name
        assert outcome.blocked_by["check"] == "test_recall.py::test_stats_shape", name
    run = collector.run
    warned = [w for r in run.results.values() for w in r.warnings if "server error" in w.message]
    assert warned, "the 500 was not reported"
    assert {rid for w in warned for rid in w.requirements} == {"AMP11-REST-11"}
