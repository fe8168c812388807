"""Resets through ``reference_server.netproxy`` (issue 36): before the request reaches the server (a GET
of /spec, twice), and after the server applied it (a create among an owner's listed cells, a scoring
PATCH of a rate check, a lifecycle pass). Each run must PASS with nothing left on the server."""

from __future__ import annotations

import pytest

from reference_server.netproxy import Fault
from tests.network.harness import assert_recovered, run_through

CREATE = r"^POST /amp/v1/memories$"


@pytest.mark.slow
def test_a_get_reset_twice_before_it_arrives_is_repeated() -> None:
    """Before: the client repeats once; the second reset left AMP-CAP/-AUTH checks errored (and on
    other exchanges judged a status 0)."""
    run = run_through([Fault("reset-before", match=r"^GET /amp/v1/spec", nth=(2, 3))], "--only", "cap,auth")
    assert_recovered(run, "reset-before")


@pytest.mark.slow
def test_a_create_applied_but_unanswered_is_reconciled_not_sent_twice() -> None:
    """Before: the POST was repeated blind, the owner had 6 cells, not 5 (AMP-LIST-03/-07/-08 FAIL),
    and the first cell was never cleaned up."""
    run = run_through([Fault("reset-after", match=CREATE, nth=(14,))], "--only", "list,srch")
    assert_recovered(run, "reset-after")


@pytest.mark.slow
def test_a_scoring_patch_applied_but_unanswered_reruns_the_check() -> None:
    """Before: the repeated PATCH spent the budget twice (AMP-RATE-08 FAIL, the rest blocked)."""
    run = run_through([Fault("reset-after", match=r"^PATCH /amp/v1/memories/", nth=(3,))], "--only", "rate")
    assert_recovered(run, "reset-after")


@pytest.mark.slow
def test_a_lifecycle_pass_applied_but_unanswered_reruns_its_checks() -> None:
    """Before: the repeated pass moved nothing the second time (AMP-ADMIN-05 FAIL twice)."""
    run = run_through(
        [Fault("reset-after", match=r"^POST /amp/v1/lifecycle/run", nth=(6,))], "--only", "admin,lc,srch"
    )
    assert_recovered(run, "reset-after")


@pytest.mark.slow
def test_a_refused_delete_repeated_after_a_lost_answer_is_settled_by_one_read() -> None:
    """The 4th DELETE of the check is its probe (a DELETE of an active cell, refused with 409); its answer
    is lost and the repeat answers 409 too. Before: ambiguous (the first attempt might have deleted it),
    so the whole check re-ran. Now one read shows the cell still active: the repeat's 409 is the answer."""
    run = run_through(
        [Fault("reset-after", match=r"^DELETE /amp/v1/memories/", nth=(4,))],
        "--check",
        "test_delete_of_an_active_cell_is_refused",
    )
    assert_recovered(run, "reset-after")
    assert run.network is not None
    assert run.network["reconciled"] >= 1 and run.network["rerun"] == [], run.network
