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

import json
from functools import partial
from typing import Any

import httpx

from amp_conformance import Amp, check
from amp_conformance.amp01.checks._lifecycle_passes import LOW, both_passes, first_pass, together
from amp_conformance.amp01.checks._support import (
    Marks,
    about,
    expect_error,
    expect_step,
    listings_by_status,
    shared_replies,
    shown,
    skip_if_admin_token_refused,
)
from amp_conformance.engine.client import Client, Reply
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import ToolError

ADMIN_HEADER = "X-AMP-Admin-Token"
TRANSITION_KEYS = ("active_to_stale", "stale_to_archived", "stale_to_active")
LOW_SCORE = {"importance": 0.2}
NO_TOKEN = "needs the server's admin token: give --admin-token"


# --------------------------------------------------------------------------------------- helpers


def can_create(amp: Amp) -> bool:
    """Whether the run can act as an agent (false when the server requires keys and none were given)."""
    return amp.keys_mode or amp.capabilities.get("api_keys_required") is not True


def run_endpoint(amp: Amp) -> tuple[str, bool]:
    """(path, relative to the origin root?) of the manual-run route as /spec advertises it."""
    scheduler = amp.capabilities.get("lifecycle_scheduler")
    endpoint = scheduler.get("manual_run_endpoint") if isinstance(scheduler, dict) else None
    if isinstance(endpoint, str) and endpoint.strip():
        endpoint = endpoint.strip()
        if endpoint.startswith(("http://", "https://")):
            return httpx.URL(endpoint).raw_path.decode("ascii"), True
        if endpoint.startswith("/"):
            return endpoint, True
        return f"/{endpoint}", False
    amp.note("/spec names no lifecycle_scheduler.manual_run_endpoint: used /lifecycle/run under the base URL")
    return "/lifecycle/run", False


def run_pass(amp: Amp, client: Client) -> Reply:
    """POST to the manual-run route. A 404 there, when /spec named the route, means /spec names a
    route that does not exist (AMP-CAP-10): the step every admin check needs is broken."""
    path, root = run_endpoint(amp)
    reply = client.post(path, root=root)
    advertised = amp.capabilities.get("lifecycle_scheduler")
    if isinstance(advertised, dict) and advertised.get("manual_run_endpoint"):
        expect_step(
            amp,
            reply.status != 404,
            f"POST {path}, the manual-run route /spec advertises, answered 404: no such route",
            reply,
            step="reaching the manual-run route /spec advertises",
            requirement="AMP-CAP-10",
        )
    return reply


def listed_under(amp: Amp, cell: dict[str, Any]) -> str | None:
    """The status filter under which the owner's lists show the cell (no read by id), or None.

    A list is the suite's way to see a status without touching the cell: a list that fails is a
    broken step (AMP-LIST-03), not a finding about the admin route."""
    for status, reply in listings_by_status(amp, cell["identity"]["owner_id"]):
        results = reply.json_object().get("results")
        if isinstance(results, list) and any(
            isinstance(item, dict) and item.get("id") == cell["id"] for item in results
        ):
            return status
    return None


def expect_no_pass(amp: Amp, posts: RefusedPosts, group: str, what: str, requirement: str) -> None:
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


def gate(amp: Amp, posts: RefusedPosts | None = None) -> str:
    """The requirement a refused admin request answers to: AMP-ADMIN-03 when the server has a token
    (the run was given it), AMP-ADMIN-02 when it has none (no token given, or the server answers
    ADMIN_DISABLED to every POST although one was given: see :meth:`RefusedPosts.disabled`)."""
    if amp.session.options.admin_token is None or (posts is not None and posts.disabled()):
        return "AMP-ADMIN-02"
    return "AMP-ADMIN-03"


def probe_cell(amp: Amp) -> dict[str, Any] | None:
    return amp.create_cell(scoring=LOW_SCORE) if can_create(amp) else None


Group = tuple[str, str, str, list[str | None]]


def _groups(amp: Amp) -> list[Group]:
    """The refused POSTs the checks without the right token judge, in the order they are sent: (group,
    what its POSTs are, the rule a pass they ran breaks, their token headers; None: no header)."""
    secret = amp.session.options.admin_token
    made_up: list[str | None] = ["amp-conformance-made-up-token"]
    if secret is None:
        return [
            ("none", "the tokenless POST", gate(amp), [None]),
            ("made-up", "the POST with a made-up token", "AMP-ADMIN-02", made_up),
        ]
    groups: list[Group] = [
        ("none", "the tokenless POST", gate(amp), [None]),
        ("wrong", "the POSTs with wrong tokens", "AMP-ADMIN-03", [f"{secret}-wrong", ""]),
    ]
    if secret.swapcase() != secret:
        groups.append(("flipped", "the POST with a case-flipped token", "AMP-ADMIN-10", [secret.swapcase()]))
    return groups


class RefusedPosts:
    """Every POST to the run route without the right token, sent once per run (per worker) after one
    low-score probe cell was created, the probe's status listed after each group: each check judges its
    group's answers and the probe before and after them. Without a pass the probe stays active; a group
    whose POSTs ran one is that group's check's finding, and hides what later groups did (a step)."""

    def __init__(self, amp: Amp):
        made, replies = shared_replies(amp, "admin:refused-posts", _refuse)
        self.probe: dict[str, Any] | None = made["probe"]
        self.order: list[str] = made["order"]
        self.posts = {group: [replies[at] for at in made["posts"][group]] for group in self.order}
        self.after: dict[str, str | None] = made["after"]
        self.whats: dict[str, str] = made["whats"]
        self.requirements: dict[str, str] = made["requirements"]

    def disabled(self) -> str | None:
        """The server's own reason when it answered 403 ADMIN_DISABLED to every refused POST (no token
        and wrong ones): its admin route is off, so the ``--admin-token`` the run was given is not the
        server's and the rules for a server with a token (AMP-ADMIN-03, -10) cannot be judged."""
        said: list[str] = []
        for group in self.order:
            for reply in self.posts[group]:
                try:
                    body = reply.json()
                except AssertionError:
                    return None
                error = body.get("error") if isinstance(body, dict) else None
                if (
                    reply.status != 403
                    or not isinstance(error, dict)
                    or error.get("code") != "ADMIN_DISABLED"
                ):
                    return None
                message = error.get("message")
                said.append(f"403 ADMIN_DISABLED: {json.dumps(message)}" if isinstance(message, str) else "")
        return next((s for s in said if s), "403 ADMIN_DISABLED") if said else None

    def skip_if_disabled(self, amp: Amp, requirement: str) -> None:
        reason = self.disabled()
        if reason is not None and amp.session.options.admin_token is not None:
            amp.skip(
                f"the server's admin route is disabled (every POST answered {reason}), so the given "
                f"--admin-token is not the server's; {requirement} needs a server started with a token"
            )

    def before(self, group: str) -> str | None:
        """The group sent right before ``group`` (None for the first)."""
        index = self.order.index(group)
        return self.order[index - 1] if index else None

    def replies(self, group: str) -> list[Reply]:
        if group not in self.posts:
            raise ToolError(f"no refused POSTs of the group {group!r} were sent")
        return self.posts[group]


def _refuse(amp: Amp) -> dict[str, Any]:
    marks = Marks(amp)
    probe = probe_cell(amp)
    made: dict[str, Any] = {"probe": probe, "order": [], "posts": {}, "after": {}}
    made |= {"whats": {}, "requirements": {}}
    for group, what, requirement, tokens in _groups(amp):
        clients = [amp.anonymous() if t is None else amp.with_headers({ADMIN_HEADER: t}) for t in tokens]
        # a group's POSTs at once (one list after them tells whether any of them ran a pass)
        sent = [marks(reply) for reply in together(amp, [partial(run_pass, amp, c) for c in clients])]
        made["order"].append(group)
        made["posts"][group] = sent
        made["after"][group] = listed_under(amp, probe) if probe is not None else None
        made["whats"][group] = what
        made["requirements"][group] = requirement
    return made


def _token_only_pass(amp: Amp) -> Exchange:
    # a low-score cell any pass makes stale, so the report has a count above zero (a server leaving
    # out zero counts then shows it, and is not taken for one answering {}): the refused POSTs' probe
    # cell, made with them (once per run), which only a pass with the right token may move
    RefusedPosts(amp)
    return run_pass(amp, amp.admin()).exchange


def token_only_pass(amp: Amp) -> Reply:
    """One pass asked with the admin token alone (``amp.admin()``), after the refused POSTs' probe cell
    was made, sent once per run: AMP-ADMIN-04 judges its report, AMP-ADMIN-08 that it ran at all."""
    return Reply(amp.shared("admin:token-only-pass", _token_only_pass))


def expect_transitions(amp: Amp, reply: Reply) -> dict[str, Any]:
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
def test_run_endpoint_exists_and_refuses_without_a_token(amp: Amp) -> None:
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


@check("AMP-ADMIN-02")
def test_server_without_a_token_answers_admin_disabled(amp: Amp) -> None:
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


@check("AMP-ADMIN-03")
def test_a_wrong_token_is_refused_and_runs_no_pass(amp: Amp) -> None:
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
def test_the_token_comparison_is_exact(amp: Amp) -> None:
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


@check("AMP-ADMIN-04", "AMP-ADMIN-06", global_effects=True)
def test_a_pass_reports_all_three_transition_counts(amp: Amp) -> None:
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
def test_a_pass_counts_the_cells_it_moved(amp: Amp) -> None:
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
def test_a_pass_may_report_extra_members(amp: Amp) -> None:
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
def test_a_pass_needs_only_the_admin_token(amp: Amp) -> None:
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
def test_a_second_pass_does_not_move_the_cell_again(amp: Amp) -> None:
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
