"""Whole runs through ``reference_server.netproxy`` with several faults (issue 36): v0.1 with
``--workers 4``, v1.1 over REST. No FAIL, no traceback, nothing left on the server."""

from __future__ import annotations

import pytest

from reference_server.netproxy import Fault
from tests.network.harness import assert_recovered, run_amp11_through, run_through

CREATE = r"^POST /amp/v1/memories$"


@pytest.mark.slow
def test_a_parallel_run_recovers_from_every_kind() -> None:
    """``--workers 4`` over the whole suite, one fault of each kind on exchanges several workers send."""
    faults = [
        Fault("reset-before", match=r"^GET /amp/v1/spec", nth=(2,)),
        Fault("reset-after", match=CREATE, nth=(14, 60)),
        Fault("reset-after", match=r"^PATCH /amp/v1/memories/", nth=(30,)),
        Fault("cut-body", match=CREATE, nth=(25,)),
        Fault("cut-body", match=r"^GET /amp/v1/memories\?", nth=(5,)),
        Fault("stall", match=r"^GET /amp/v1/memories/", nth=(10,), seconds=3.0),
        Fault("latency", match=r"^DELETE ", nth=(20,), seconds=3.0),
    ]
    run = run_through(faults, "--workers", "4", timeout=2.0)
    assert_recovered(run, "reset-before", "reset-after", "cut-body", "stall", "latency", must_pass=False)


@pytest.mark.slow
def test_amp11_over_rest_recovers_and_leaves_nothing() -> None:
    """v1.1's REST writes are POSTs: a create applied but unanswered, a recall (a read sent as POST,
    safe to repeat) reset, an export cut short."""
    faults = [
        Fault("reset-after", match=r"^POST /v1/memories$", nth=(10,)),
        Fault("reset-before", match=r"^POST /v1/memories/recall", nth=(5,)),
        Fault("cut-body", match=r"^POST /v1/memories/export", nth=(3,)),
    ]
    run = run_amp11_through(faults)
    assert_recovered(run, "reset-after", "reset-before", "cut-body")
