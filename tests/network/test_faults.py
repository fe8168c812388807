"""One whole run per fault kind through ``reference_server.netproxy`` (issue 36): each fault is put on
a chosen exchange that broke a correct server before (a GET of /spec reset twice, a create applied
but unanswered among an owner's listed cells, a scoring PATCH of a rate check, a lifecycle pass, a
create cut short, a read stalled, a DELETE answered late), and each run must PASS with nothing left
on the server. Each selection is a subset of the areas, so a run takes a few seconds."""

from __future__ import annotations

from reference_server.netproxy import Fault
from tests.network.harness import assert_recovered, run_amp11_through, run_through

CREATE = r"^POST /amp/v1/memories$"


def test_a_get_reset_twice_before_it_arrives_is_repeated() -> None:
    """Before: the client repeats once; the second reset left AMP-CAP/-AUTH checks errored (and on
    other exchanges judged a status 0)."""
    run = run_through([Fault("reset-before", match=r"^GET /amp/v1/spec", nth=(2, 3))], "--only", "cap,auth")
    assert_recovered(run, "reset-before")


def test_a_create_applied_but_unanswered_is_reconciled_not_sent_twice() -> None:
    """Before: the POST was repeated blind, the owner had 6 cells, not 5 (AMP-LIST-03/-07/-08 FAIL),
    and the first cell was never cleaned up."""
    run = run_through([Fault("reset-after", match=CREATE, nth=(14,))], "--only", "list,srch")
    assert_recovered(run, "reset-after")


def test_a_scoring_patch_applied_but_unanswered_reruns_the_check() -> None:
    """Before: the repeated PATCH spent the budget twice (AMP-RATE-08 FAIL, the rest blocked)."""
    run = run_through([Fault("reset-after", match=r"^PATCH /amp/v1/memories/", nth=(3,))], "--only", "rate")
    assert_recovered(run, "reset-after")


def test_a_lifecycle_pass_applied_but_unanswered_reruns_its_checks() -> None:
    """Before: the repeated pass moved nothing the second time (AMP-ADMIN-05 FAIL twice)."""
    run = run_through(
        [Fault("reset-after", match=r"^POST /amp/v1/lifecycle/run", nth=(6,))], "--only", "admin,lc,srch"
    )
    assert_recovered(run, "reset-after")


def test_a_create_whose_answer_is_cut_short_is_reconciled() -> None:
    """Before: INCOMPLETE, the checks on the shared create errored, the created cell left behind."""
    run = run_through([Fault("cut-body", match=CREATE, nth=(2,))], "--only", "cre,read")
    assert_recovered(run, "cut-body")


def test_a_read_stalled_past_the_timeout_is_repeated() -> None:
    """Before: INCOMPLETE, 7 checks errored under the one timed-out GET."""
    run = run_through(
        [Fault("stall", match=r"^GET /amp/v1/memories/", nth=(2,), seconds=3.0)],
        "--only",
        "read,del",
        timeout=2.0,
    )
    assert_recovered(run, "stall")


def test_a_delete_answered_after_the_timeout_is_repeated_and_taken_as_done() -> None:
    """The DELETE was applied; its repeat answers 404 (gone). Before: INCOMPLETE, 6 checks errored."""
    run = run_through(
        [Fault("latency", match=r"^DELETE ", nth=(2,), seconds=3.0)], "--only", "del", timeout=2.0
    )
    assert_recovered(run, "latency")


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
