"""The admin route that runs a lifecycle pass on demand (AMP-ADMIN-*).

The route is the one ``/spec`` names in ``lifecycle_scheduler.manual_run_endpoint``. Whether a pass
ran is seen on a probe cell with importance 0.2 (decay score below 0.3, so any pass makes it stale),
observed through ``GET /memories?owner_id=...&status=...`` and never by id: a read by id counts as an
access and restarts the decay clock (requirements.md 0.3, hygiene).

Without ``--admin-token`` the suite still checks that the route refuses (403, never 404) and runs no
pass. With it, wrong tokens are refused; the right token is used only with ``--allow-global-effects``
(``amp.admin()`` skips otherwise), because a pass moves cells of everyone on the server.
"""

from __future__ import annotations

from typing import Any

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._lifecycle_passes import LOW, both_passes, first_pass
from amp_conformance.amp01.checks._shared_probes import (
    ADMIN_HEADER,
    RefusedPosts,
    can_create,
    gate,
    run_pass,
    token_only_pass,
)
from amp_conformance.amp01.checks._support import (
    about,
    expect_error,
    expect_step,
    shown,
    skip_if_admin_token_refused,
)
from amp_conformance.engine.client import Reply

TRANSITION_KEYS = ("active_to_stale", "stale_to_archived", "stale_to_active")
NO_TOKEN = "needs the server's admin token: give --admin-token"


# --------------------------------------------------------------------------------------- helpers


def expect_no_pass(amp: Amp01Context, posts: RefusedPosts, group: str, what: str, requirement: str) -> None:
    """The low-score probe cell is still active after ``group``'s POSTs: no lifecycle pass ran (else
    ``requirement`` is broken). It must have been active before them, or nothing can be seen: an
    earlier group's POSTs ran a pass, the finding of that group's check (a step here)."""
    if posts.probe is None:
        amp.note(f"{what}: no probe cell (no keys to create one), so 'no pass ran' was not observed")
        return
    earlier = posts.before(group)
    if earlier is not None:
        status = posts.after[earlier]
        expect_step(
            amp,
            status == "active",
            f"{posts.whats[earlier]} ran a lifecycle pass: the probe cell with decay score 0.2 is listed as "
            f"{shown(status) if status else 'nothing'}, not active",
            step="a low-score probe cell still active before the check's POSTs",
            requirement=posts.requirements[earlier],
        )
    status = posts.after[group]
    amp.expect(
        status == "active",
        f"{what} ran a lifecycle pass: the probe cell with decay score 0.2 is listed as "
        f"{shown(status) if status else 'nothing'}, not active",
        requirement=requirement,
    )


def expect_transitions(amp: Amp01Context, reply: Reply) -> dict[str, Any]:
    """200 with all three transition counts as non-negative integers (AMP-ADMIN-04, -06).

    For a check asking about something else (the counts, a second pass) the report's shape is a step:
    a wrong one blocks it under the requirement the shape breaks."""
    step = "a lifecycle pass with the right admin token"
    status = reply.status
    expect_step(
        amp,
        status == 200,
        f"{step} answered {status}, not 200",
        reply,
        step=step,
        requirement="AMP-ADMIN-04",
        expected="200",
    )
    body = reply.json_object()
    transitions = body.get("transitions")
    expect_step(
        amp,
        isinstance(transitions, dict),
        f"the pass report has no 'transitions' object (it has {shown(transitions)})",
        reply,
        step=step,
        requirement="AMP-ADMIN-04",
    )
    assert isinstance(transitions, dict)
    expect_step(
        amp,
        transitions != {},
        "transitions is {}: the API reference says an empty object means the pass failed",
        reply,
        step=step,
        requirement="AMP-ADMIN-06",
    )
    missing = [key for key in TRANSITION_KEYS if key not in transitions]
    expect_step(
        amp,
        not missing,
        f"transitions leaves out {', '.join(missing)} (all three keys are required, even when zero)",
        reply,
        step=step,
        requirement="AMP-ADMIN-04",
    )
    wrong = {
        key: transitions[key]
        for key in TRANSITION_KEYS
        if not isinstance(transitions[key], int) or isinstance(transitions[key], bool) or transitions[key] < 0
    }
    expect_step(
        amp,
        not wrong,
        f"transition counts that are not non-negative integers: {shown(wrong)}",
        reply,
        step=step,
        requirement="AMP-ADMIN-04",
    )
    return transitions


# ---------------------------------------------------------------------------- without the token


@check("AMP-ADMIN-01", "AMP-ADMIN-03")
def test_run_endpoint_exists_and_refuses_without_a_token(amp: Amp01Context) -> None:
    """POST to the advertised run endpoint without a token is a 403 refusal (never 404) and runs no pass."""
    posts = RefusedPosts(amp)
    (reply,) = posts.replies("none")
    rule = gate(amp, posts)
    amp.expect(
        reply.status != 404,
        "the manual-run endpoint /spec advertises answered 404: disabled or not, it must exist",
        reply,
        expected="403",
        requirement="AMP-ADMIN-01",
    )
    # which rule refuses a tokenless POST depends on the server having a token (-03) or not (-02)
    amp.expect(
        reply.status != 200,
        "a POST without an admin token answered 200: it ran a lifecycle pass",
        reply,
        expected="403",
        requirement=rule,
    )
    with about(rule):
        if rule == "AMP-ADMIN-03":
            expect_error(amp, reply, 403, "ACCESS_DENIED")
        else:
            error = expect_error(amp, reply, 403, ("ADMIN_DISABLED", "ACCESS_DENIED"))
            amp.note(f"without a token the endpoint answered 403 {error['code']}")
    expect_no_pass(amp, posts, "none", "the tokenless POST", rule)


@pytest.mark.smoke
@check("AMP-ADMIN-02")
def test_server_without_a_token_answers_admin_disabled(amp: Amp01Context) -> None:
    """A server with no admin token answers 403 ADMIN_DISABLED whatever token is sent, and runs no pass."""
    if amp.session.options.admin_token is not None:
        amp.skip(
            "the run was given --admin-token, so the server has one: AMP-ADMIN-02 needs a server started "
            "without AMP_ADMIN_TOKEN and a run without --admin-token"
        )
    posts = RefusedPosts(amp)
    codes: dict[str, str] = {}
    for label, group in (("no token header", "none"), ("a made-up token", "made-up")):
        (reply,) = posts.replies(group)
        amp.expect(
            reply.status != 200, f"a POST with {label} must not run a lifecycle pass", reply, expected="403"
        )
        codes[label] = expect_error(amp, reply, 403, ("ADMIN_DISABLED", "ACCESS_DENIED"))["code"]
    amp.expect(
        len(set(codes.values())) == 1,
        "the refusal depends on the token sent: "
        + ", ".join(f"{label}: {code}" for label, code in codes.items()),
        expected="ADMIN_DISABLED for both",
    )
    code = next(iter(codes.values()))
    if code == "ADMIN_DISABLED":
        amp.note("the endpoint answered 403 ADMIN_DISABLED: the server has no admin token configured")
    else:
        amp.note(
            "the endpoint answered 403 ACCESS_DENIED: the server has an admin token configured, so "
            "ADMIN_DISABLED could not be observed (start it without AMP_ADMIN_TOKEN to verify AMP-ADMIN-02)"
        )
    expect_no_pass(amp, posts, "none", "the tokenless POST", "AMP-ADMIN-02")
    expect_no_pass(amp, posts, "made-up", "the POST with a made-up token", "AMP-ADMIN-02")


@pytest.mark.smoke
@check("AMP-ADMIN-03")
def test_a_wrong_token_is_refused_and_runs_no_pass(amp: Amp01Context) -> None:
    """A wrong X-AMP-Admin-Token gets 403 ACCESS_DENIED and changes nothing."""
    if amp.session.options.admin_token is None:
        amp.skip(NO_TOKEN + " (without it, AMP-ADMIN-01/-02 check the refusal)")
    posts = RefusedPosts(amp)
    posts.skip_if_disabled(amp, "AMP-ADMIN-03")
    for label, reply in zip(("a wrong token", "an empty token"), posts.replies("wrong"), strict=True):
        amp.expect(reply.status != 200, f"{label} must not run a lifecycle pass", reply, expected="403")
        expect_error(amp, reply, 403, "ACCESS_DENIED")
    expect_no_pass(amp, posts, "wrong", "the POSTs with wrong tokens", "AMP-ADMIN-03")


@check("AMP-ADMIN-10")
def test_the_token_comparison_is_exact(amp: Amp01Context) -> None:
    """A token differing from the right one only in letter case is wrong: 403 ACCESS_DENIED, no pass."""
    secret = amp.session.options.admin_token
    if secret is None:
        amp.skip(NO_TOKEN)
    if secret.swapcase() == secret:
        amp.skip("the admin token has no letters, so no case-flipped variant exists")
    posts = RefusedPosts(amp)
    posts.skip_if_disabled(amp, "AMP-ADMIN-10")
    (reply,) = posts.replies("flipped")
    amp.expect(
        reply.status != 200, "a case-flipped token must not run a lifecycle pass", reply, expected="403"
    )
    expect_error(amp, reply, 403, "ACCESS_DENIED")
    expect_no_pass(amp, posts, "flipped", "the POST with a case-flipped token", "AMP-ADMIN-10")


# ------------------------------------------------------------------- with the token (global effects)


@pytest.mark.smoke
@check("AMP-ADMIN-04", "AMP-ADMIN-06", global_effects=True)
def test_a_pass_reports_all_three_transition_counts(amp: Amp01Context) -> None:
    """The right token gets 200 {"transitions": {...}} with all three keys as integers >= 0 (never {})."""
    client = amp.admin()
    reply = token_only_pass(amp)  # AMP-ADMIN-08 judges it too
    if reply.status == 401:
        amp.note("the admin route wanted an agent identity as well as the token (AMP-ADMIN-08)")
        client.headers.update(amp.agent("a").headers())
        reply = run_pass(amp, client)
    skip_if_admin_token_refused(amp, reply)
    expect_transitions(amp, reply)


@check("AMP-ADMIN-05", "AMP-ADMIN-03", global_effects=True)
def test_a_pass_counts_the_cells_it_moved(amp: Amp01Context) -> None:
    """A pass moves the suite's low-score cells to stale, and active_to_stale counts at least them."""
    amp.admin()
    amp.agent("a")  # skips (the server needs keys the run lacks) before anything is sent
    passes = first_pass(amp)  # the lifecycle checks' shared first pass over one owner's cells
    first = passes.first
    transitions = expect_transitions(amp, first.reply)
    amp.expect(
        transitions["active_to_stale"] >= len(LOW),
        f"active_to_stale is {transitions['active_to_stale']}, fewer than the suite's {len(LOW)} "
        "low-score cells the pass made stale",
        first.reply,
        requirement="AMP-ADMIN-05",
    )
    for name in LOW:
        status = first.status(passes.ids[name])
        amp.expect(
            status == "stale",
            f"after the pass a low-score cell is listed as {shown(status)}, not stale",
            first.lists["stale"],
            requirement="AMP-ADMIN-05",
        )
    status = first.status(passes.ids["high"])
    amp.expect(
        status == "active",
        f"after the pass a healthy cell is listed as {shown(status)}, not active",
        first.lists["active"],
        requirement="AMP-ADMIN-05",
    )


@check("AMP-ADMIN-07", global_effects=True)
def test_a_pass_may_report_extra_members(amp: Amp01Context) -> None:
    """Members beside the three counts are tolerated; a 'purged' count, if present, is an integer >= 0.

    The report judged is the lifecycle checks' shared first pass when the run can create cells (any
    pass's report shows its members), else a pass of its own."""
    client = amp.admin()
    reply = first_pass(amp).first.reply if can_create(amp) else run_pass(amp, client)
    skip_if_admin_token_refused(amp, reply)
    amp.expect_status(reply, 200, what="a lifecycle pass with the right admin token")
    body = reply.json_object()
    extra = sorted(set(body) - {"transitions"})
    transitions = body.get("transitions")
    if isinstance(transitions, dict):
        extra += [f"transitions.{key}" for key in sorted(set(transitions) - set(TRANSITION_KEYS))]
    if extra:
        amp.note(f"extra members in the pass report: {', '.join(extra)}")
    if "purged" in body:
        purged = body["purged"]
        amp.expect(
            isinstance(purged, int) and not isinstance(purged, bool) and purged >= 0,
            f"'purged' is an integer >= 0 (got {shown(purged)})",
            reply,
        )


@check("AMP-ADMIN-08", global_effects=True)
def test_a_pass_needs_only_the_admin_token(amp: Amp01Context) -> None:
    """The admin route works with the admin token alone: no X-AMP-Agent-ID, no X-AMP-API-Key."""
    client = amp.admin()
    sent = {name.lower() for name in client.headers}
    amp.expect(
        sent == {ADMIN_HEADER.lower()}, f"the request carries only the admin token (sent {sorted(sent)})"
    )
    reply = token_only_pass(amp)  # the pass AMP-ADMIN-04 judges the report of
    skip_if_admin_token_refused(amp, reply)
    mode = "with API keys on" if amp.keys_mode or not can_create(amp) else "without API keys"
    amp.expect(
        reply.status == 200,
        f"a pass with only the admin token ({mode}) answers 200, got {reply.status}",
        reply,
        expected="200",
    )


@check("AMP-ADMIN-09", global_effects=True)
def test_a_second_pass_does_not_move_the_cell_again(amp: Amp01Context) -> None:
    """Right after a pass made a cell stale, a second pass leaves it stale (not archived, not active)."""
    amp.admin()
    amp.agent("a")
    passes = both_passes(amp)  # the lifecycle checks' shared first and second passes
    expect_transitions(amp, passes.first.reply)
    passes.step_stale_after_first(amp, "w")
    second = passes.after_second()
    expect_transitions(amp, second.reply)
    status = second.status(passes.ids["w"])
    amp.expect(
        status == "stale",
        f"after a second pass the cell is listed as {shown(status)}, not stale",
        second.lists["stale"],
    )
