"""Probes that checks of several modules send alike, sent once per run through ``amp.shared``.

Each getter sends (or adopts) the same requests for every check that asks, and judges nothing: each
check judges the answers it is about, exactly as it judged the ones it used to send itself.

* :func:`unknown_probes`: agent "a"'s GET, PATCH and DELETE of an id no server has issued (AMP-DEL-08
  and the error table). No cell to change, so the answers are the same whichever check sends them.
* The admin route (moved here from test_admin, whose checks make them): :class:`RefusedPosts`, every
  POST without the right token after one low-score probe cell, and :func:`token_only_pass`. AMP-CAP-10's
  check, in the same serial group (``passes``) after test_admin's, judges three of those requests
  when they were made already (:func:`admin_probes_made`), and sends its own otherwise: it never
  makes them, so it depends on no probe cell.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import httpx

from amp_conformance import Amp01Context
from amp_conformance.amp01.checks._lifecycle_passes import together
from amp_conformance.amp01.checks._support import Marks, expect_step, listings_by_status, shared_replies
from amp_conformance.engine.client import Client, Reply
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import ToolError

#: The body of the PATCH of an unknown id (any valid body: there is no cell to apply it to).
UNKNOWN_PATCH = {"content": {"text": "nobody here"}}


def unknown_probes(amp: Amp01Context) -> tuple[str, dict[str, Reply]]:
    """A well-formed id no server has issued and agent "a"'s GET, PATCH and DELETE of it by method, sent
    once per run: AMP-DEL-08's check and the error table (AMP-ERR-03, with AMP-READ-10 and AMP-DEL-08
    for its GET and DELETE) each judge these answers. Needs the server's conventions (a second agent),
    as :meth:`Amp01Context.unknown_id` does. Not ``_shared_cells.unknown_read``'s GET: the error table is made
    after the error probes took their stranger, and a step it makes hands the checks adopting it every
    role it holds (AMP-READ-10's check plays another stranger)."""
    amp.agent("a")

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        unknown = a.unknown_id()
        client = a.as_agent("a")
        path = f"/memories/{unknown}"
        return {
            "id": unknown,
            "GET": marks(client.get(path)),
            "PATCH": marks(client.patch(path, UNKNOWN_PATCH)),
            "DELETE": marks(client.delete(path)),
        }

    made, replies = shared_replies(amp, "unknown-id:get-patch-delete", make)
    return str(made["id"]), {method: replies[made[method]] for method in ("GET", "PATCH", "DELETE")}


# the admin route's refused POSTs and the pass with the token alone (test_admin, test_capabilities) --

ADMIN_HEADER = "X-AMP-Admin-Token"
LOW_SCORE = {"importance": 0.2}


def can_create(amp: Amp01Context) -> bool:
    """Whether the run can act as an agent (false when the server requires keys and none were given)."""
    return amp.keys_mode or amp.capabilities.get("api_keys_required") is not True


def run_endpoint(amp: Amp01Context) -> tuple[str, bool]:
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


def run_pass(amp: Amp01Context, client: Client) -> Reply:
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


def listed_under(amp: Amp01Context, cell: dict[str, Any]) -> str | None:
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


def gate(amp: Amp01Context, posts: RefusedPosts | None = None) -> str:
    """The requirement a refused admin request answers to: AMP-ADMIN-03 when the server has a token
    (the run was given it), AMP-ADMIN-02 when it has none (no token given, or the server answers
    ADMIN_DISABLED to every POST although one was given: see :meth:`RefusedPosts.disabled`)."""
    if amp.session.options.admin_token is None or (posts is not None and posts.disabled()):
        return "AMP-ADMIN-02"
    return "AMP-ADMIN-03"


def probe_cell(amp: Amp01Context) -> dict[str, Any] | None:
    return amp.create_cell(scoring=LOW_SCORE) if can_create(amp) else None


Group = tuple[str, str, str, list[str | None]]


def _groups(amp: Amp01Context) -> list[Group]:
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

    def __init__(self, amp: Amp01Context):
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

    def skip_if_disabled(self, amp: Amp01Context, requirement: str) -> None:
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


def _refuse(amp: Amp01Context) -> dict[str, Any]:
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


def _token_only_pass(amp: Amp01Context) -> Exchange:
    # a low-score cell any pass makes stale, so the report has a count above zero (a server leaving
    # out zero counts then shows it, and is not taken for one answering {}): the refused POSTs' probe
    # cell, made with them (once per run), which only a pass with the right token may move
    RefusedPosts(amp)
    return run_pass(amp, amp.admin()).exchange


def token_only_pass(amp: Amp01Context) -> Reply:
    """One pass asked with the admin token alone (``amp.admin()``), after the refused POSTs' probe cell
    was made, sent once per run: AMP-ADMIN-04 judges its report, AMP-ADMIN-08 that it ran at all."""
    return Reply(amp.shared("admin:token-only-pass", _token_only_pass))


def admin_probes_made(amp: Amp01Context) -> tuple[Reply, Reply, Reply] | None:
    """The tokenless POST, the POST with the token ``<token>-wrong`` and the pass asked with the token
    alone, when :class:`RefusedPosts` and :func:`token_only_pass` were made already in this run
    (AMP-CAP-10's check judges the same three requests; it never makes them, so that it depends on no
    probe cell; test_admin's checks, in the same serial group, come first); else None. Only with
    the admin token and a run route /spec names by its absolute path (the requests are then the same)."""
    secret = amp.session.options.admin_token
    path, root = run_endpoint(amp)
    scheduler = amp.capabilities.get("lifecycle_scheduler")
    named = scheduler.get("manual_run_endpoint") if isinstance(scheduler, dict) else None
    if secret is None or not root or named != path:
        return None
    if not (amp.shared_made("admin:refused-posts") and amp.shared_made("admin:token-only-pass")):
        return None
    posts = RefusedPosts(amp)
    (anonymous,) = posts.replies("none")
    wrong = posts.replies("wrong")[0]
    return anonymous, wrong, token_only_pass(amp)
