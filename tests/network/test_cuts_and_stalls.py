"""Answers that never come whole through ``reference_server.netproxy`` (issue 36): a create's answer
cut short, a read stalled past the timeout, a DELETE answered after it. Each run must PASS with
nothing left on the server."""

from __future__ import annotations

import pytest

from reference_server.netproxy import Fault
from tests.network.harness import assert_recovered, run_through

CREATE = r"^POST /amp/v1/memories$"


@pytest.mark.slow
def test_a_create_whose_answer_is_cut_short_is_reconciled() -> None:
    """Before: INCOMPLETE, the checks on the shared create errored, the created cell left behind."""
    run = run_through([Fault("cut-body", match=CREATE, nth=(2,))], "--only", "cre,read")
    assert_recovered(run, "cut-body")


@pytest.mark.slow
def test_a_read_stalled_past_the_timeout_is_repeated() -> None:
    """Before: INCOMPLETE, 7 checks errored under the one timed-out GET."""
    run = run_through(
        [Fault("stall", match=r"^GET /amp/v1/memories/", nth=(2,), seconds=3.0)],
        "--only",
        "read,del",
        timeout=2.0,
    )
    assert_recovered(run, "stall")


@pytest.mark.slow
def test_a_delete_answered_after_the_timeout_is_repeated_and_taken_as_done() -> None:
    """The DELETE was applied; its repeat answers 404 (gone). Before: INCOMPLETE, 6 checks errored."""
    run = run_through(
        [Fault("latency", match=r"^DELETE ", nth=(2,), seconds=3.0)], "--only", "del", timeout=2.0
    )
    assert_recovered(run, "latency")
