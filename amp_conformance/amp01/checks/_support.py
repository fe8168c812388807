"""Helpers that more than one check module needs (private to the checks; not collected by pytest).

A check module should not import another check module: pytest collects both, and the helpers of one
area would then silently depend on the other's. What two or more areas share lives here instead;
helpers used by a single module stay private to that module.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn, TypeVar

from amp_conformance import Amp01Context
from amp_conformance.amp01.cell_rules import cell_requirement
from amp_conformance.amp01.cells import Problem, TimestampError, parse_utc_timestamp, validate_cell
from amp_conformance.amp01.context import Adopted
from amp_conformance.amp01.envelope import envelope_problems
from amp_conformance.engine.client import Reply
from amp_conformance.engine.outcomes import CheckFailure, PreconditionFailed, ToolError
from amp_conformance.engine.registry import level_of
from amp_conformance.engine.steps import Recorder
from amp_conformance.engine.text import shown as shown  # the checks import it from here too

T = TypeVar("T")

# cells: members, validity, timestamps -------------------------------------------------------------

#: Generous clock skew between the suite and the server (requirements.md §0.3 hygiene).
SKEW = timedelta(seconds=120)

#: Missing members that are a SHOULD (AMP-CELL-03), not a schema failure (see the schema's $comment).


def member(cell: Mapping[str, Any], path: str) -> Any:
    """``cell['a']['b']`` for ``path`` ``"a.b"``; None when a step is missing or not an object.

    For checks that judge the value themselves (a missing member is then just a wrong value)."""
    value: Any = cell
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def expect_member(amp: Amp01Context, cell: Any, path: str, reply: Reply | None = None) -> Any:
    """The value at the dotted ``path`` of ``cell``; a missing member fails the check clearly.

    For checks whose verdict needs the member to exist (a missing one is not a wrong value)."""
    current = cell
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            amp.fail(f"the returned cell has no member {shown(path)}", reply)
        current = current[part]
    return current


def problem_requirement(problem: Problem) -> str:
    """The catalogue id a cell problem breaks (the table the validator uses too)."""
    return cell_requirement(problem.path, problem.code)


def expect_valid_cell(amp: Amp01Context, cell: object, reply: Reply | None, what: str) -> dict[str, Any]:
    """The cell, when it validates; a missing scoring/access_policy/provenance member (AMP-CELL-03) or
    out-of-order timestamps (AMP-CELL-20) are warnings. Returns the cell.

    A broken rule is reported under the requirement it breaks: a check that asks about cell validity
    (it cites AMP-CELL-01 or that id) fails with it; any other check is blocked under it, since its own
    question is about something else. Shared so that every area holds cells to one and the same rule."""
    if not isinstance(cell, dict):
        amp.precondition_failed(
            f"{what}: the body is not a JSON object", reply, step=what, requirement="AMP-CELL-01"
        )
    problems = validate_cell(cell)
    # a problem under a rule the catalogue holds below MUST (AMP-CELL-03, -20) is a warning
    soft = [p for p in problems if level_of((problem_requirement(p),)) != "MUST"]
    hard = [p for p in problems if p not in soft]
    if soft:
        amp.warn(
            f"{what}: {_summary(soft)}",
            reply,
            requirements=tuple(sorted({problem_requirement(p) for p in soft})),
        )
    if hard:
        rid = problem_requirement(hard[0])
        message = f"{what} is not a valid cell: {_summary(hard)}"
        if rid in amp.check_spec.requirements or "AMP-CELL-01" in amp.check_spec.requirements:
            amp.fail(message, reply, expected="a cell valid under memory-cell.schema.json", requirement=rid)
        amp.precondition_failed(message, reply, step=what, requirement=rid)
    return cell


def _summary(problems: list[Problem], limit: int = 5) -> str:
    text = "; ".join(f"{p} [{p.code}]" for p in problems[:limit])
    if len(problems) > limit:
        text += f"; and {len(problems) - limit} more"
    return text


def timestamp(amp: Amp01Context, cell: Mapping[str, Any], name: str, reply: Reply | None) -> datetime | None:
    """``lifecycle.<name>`` parsed as a UTC timestamp (None when null); fails on anything else."""
    value = member(cell, f"lifecycle.{name}")
    if value is None:
        return None
    expect_step(
        amp,
        isinstance(value, str),
        f"lifecycle.{name} is {shown(value)}, neither a string nor null",
        reply,
        step=f"reading lifecycle.{name}",
        requirement="AMP-CELL-18",
    )
    try:
        return parse_utc_timestamp(value)
    except TimestampError as exc:
        message = f"lifecycle.{name} is not an RFC 3339 UTC timestamp: {exc}"
        expect_step(amp, False, message, reply, step=f"reading lifecycle.{name}", requirement="AMP-CELL-18")
        raise AssertionError("unreachable") from exc


def timestamp_set(
    amp: Amp01Context, cell: Mapping[str, Any], name: str, reply: Reply | None, what: str
) -> datetime:
    """``lifecycle.<name>`` as :func:`timestamp` parses it; a null one fails the check with ``what``."""
    value = timestamp(amp, cell, name, reply)
    amp.expect(value is not None, what, reply)
    assert value is not None
    return value


def server_now_near(moment: datetime, sent: datetime, received: datetime, reply: Reply) -> bool:
    """Whether ``moment`` can be the server's current time for ``reply``: within SKEW of the client's
    send/receive bracket, or within SKEW of the response's ``Date`` header."""
    if sent - SKEW <= moment <= received + SKEW:
        return True
    header = reply.headers.get("date")
    if header:
        try:
            date = parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return False
        if date.tzinfo is None:
            date = date.replace(tzinfo=UTC)
        # Date has whole seconds: allow one more second either way
        return date - SKEW - timedelta(seconds=1) <= moment <= date + SKEW + timedelta(seconds=1)
    return False


# requests: create, read, list --------------------------------------------------------------------


def full_body(amp: Amp01Context) -> dict[str, Any]:
    """The API reference's create example, with this run's owner and agents."""
    return amp.cell_body(
        content={
            "text": "User prefers Python for backend development",
            "metadata": {"domain": "programming", "language": "python"},
        },
        identity={"created_by": amp.agent_id("a"), "session_id": "session-789"},
        scoring={"importance": 0.8, "confidence": 0.95, "decay_rate": 0.01},
        access_policy={
            "readable_by": [amp.agent_id("b")],
            "writable_by": [amp.agent_id("b")],
            "public": False,
        },
        provenance={
            "source_type": "conversation",
            "source_ref": "conv-abc-123",
            "extraction_method": "llm_extraction",
        },
    )


def post_cell(
    amp: Amp01Context, body: Any, *, role: str | None = "a", remember_as: str | None = None
) -> Reply:
    """POST /memories as ``role`` (None: no identity); a created cell is remembered for cleanup.

    For checks that judge the create itself (``amp.create_cell`` fails on anything but a 2xx)."""
    client = amp.anonymous() if role is None else amp.as_agent(role)
    reply = client.post("/memories", body)
    remember_created(amp, reply, remember_as or role or "a")
    return reply


def remember_created(amp: Amp01Context, reply: Reply, role: str) -> None:
    """Register a cell the server created (even by mistake) so the run's cleanup removes it."""
    if 200 <= reply.status < 300:
        try:
            body = reply.json()
        except AssertionError:
            return
        if isinstance(body, dict) and isinstance(body.get("id"), str):
            amp.remember(body["id"], as_agent=role)


def created(
    amp: Amp01Context, body: Any, *, role: str = "a", what: str = "creating a cell"
) -> tuple[dict[str, Any], Reply]:
    """POST a body that must give a valid cell: 201 is AMP-CRE-01's question (a check citing it fails
    on another 2xx); for every other check a 2xx with a cell is the step it needs, and an answer lost
    in transport is reconciled (``amp.send_create``): the cell is then the owner's list's, and the
    reply the list's."""
    if "AMP-CRE-01" in amp.check_spec.requirements:
        reply = post_cell(amp, body, role=role)  # the create's answer is the question: never adopted
    else:
        sent = amp.send_create(body, as_agent=role)
        if isinstance(sent, Adopted):
            return expect_valid_cell(amp, sent.cell, sent.listing, f"the cell {what} made"), sent.listing
        reply = sent  # its cell remembered by send_create
    create_step(amp, reply, what)
    return expect_valid_cell(amp, reply.json(), reply, f"the cell returned by {what}"), reply


def create_step(amp: Amp01Context, reply: Reply, what: str) -> None:
    """A create the check needs as a step: not a 2xx blocks the check under AMP-CRE-01; a 2xx other
    than 201 is AMP-CRE-01's own question (a check citing it fails; others note it and go on)."""
    if reply.status != 201:
        if "AMP-CRE-01" in amp.check_spec.requirements or not 200 <= reply.status < 300:
            step_failed(amp, reply, what, "AMP-CRE-01", "201")
        amp.note(f"{what} answered {reply.status}, not 201 (AMP-CRE-01 is judged by its own check)")


def expect_accepted(amp: Amp01Context, reply: Reply, what: str) -> None:
    """A create whose acceptance is the check's own question: anything but a 2xx fails the check; a
    2xx other than 201 is AMP-CRE-01's question, as in :func:`create_step`."""
    if not 200 <= reply.status < 300:
        amp.fail(f"{what} answered {reply.status}, not 201", reply, expected="201")
    create_step(amp, reply, what)


def step_failed(amp: Amp01Context, reply: Reply, what: str, requirement: str, wanted: str) -> NoReturn:
    """A step answered ``reply.status`` instead of ``wanted``: a failure for a check that cites
    ``requirement``, else the check is blocked under it."""
    message = f"{what} answered {reply.status}, not {wanted}"
    if amp.creator_refused(reply):
        requirement, message = "AMP-ACL-08", f"{message}: the cell's creator was refused"
    if requirement in amp.check_spec.requirements:
        amp.fail(message, reply, expected=wanted, requirement=requirement)
    amp.precondition_failed(message, reply, step=what, requirement=requirement, expected=wanted)


def expect_step(
    amp: Amp01Context,
    condition: object,
    message: str,
    reply: Reply | None = None,
    *,
    step: str,
    requirement: str,
    expected: str | None = None,
) -> None:
    """A step's condition (``message`` states the finding): when false, a check citing ``requirement``
    fails with it; any other check is blocked under it, since its own question lies further on."""
    if condition:
        return
    if reply is not None and amp.creator_refused(reply):
        step_failed(amp, reply, step, requirement, expected or "success")
    exchange = reply.exchange if reply is not None else None
    if exchange is None and amp.evidence.exchanges:
        exchange = amp.evidence.exchanges[-1]
    # a creator's list that misses its own cells, on a server refusing creators, is AMP-ACL-08's
    cause = amp.reattribute(CheckFailure(message, expected=expected, exchange=exchange))
    if isinstance(cause, PreconditionFailed):
        requirement, step = cause.requirement, cause.step
    if requirement in amp.check_spec.requirements:
        amp.fail(message, reply, expected=expected, requirement=requirement)
    amp.precondition_failed(message, reply, step=step, requirement=requirement, expected=expected)


def expect_envelope(amp: Amp01Context, reply: Reply, what: str) -> dict[str, Any]:
    """The reply's ``error`` object; a body that is not the AMP envelope is AMP-ERR-01's finding (a
    framework's own shape, a top-level ``detail``, AMP-ERR-05's), whichever check meets it."""
    with about("AMP-ERR-01"):
        body = reply.json()
    problems = envelope_problems(body, require_details=False)
    framework = isinstance(body, dict) and "detail" in body and "error" not in body
    amp.expect(
        not problems,
        f"{what}: the error body is not the AMP envelope: " + "; ".join(problems),
        reply,
        requirement="AMP-ERR-05" if framework else "AMP-ERR-01",
    )
    error: dict[str, Any] = body["error"]
    return error


def expect_error(
    amp: Amp01Context, reply: Reply, status: int | tuple[int, ...], codes: str | tuple[str, ...] | None = None
) -> dict[str, Any]:
    """``amp.expect_error``, with an answer of the right status but not in the AMP envelope filed
    under AMP-ERR-01 (a framework's own shape under AMP-ERR-05), whichever check meets it."""
    if reply.status in ((status,) if isinstance(status, int) else status):
        expect_envelope(amp, reply, f"{reply.exchange.method} {reply.exchange.url}")
    return amp.expect_error(reply, status, codes)


def expect_refusal(amp: Amp01Context, reply: Reply, what: str) -> None:
    """``amp.expect_refusal``, with a 403 that is not the AMP envelope filed as :func:`expect_error` does."""
    if reply.status == 403:
        expect_envelope(amp, reply, what)
    amp.expect_refusal(reply, what)


def expect_unknown_id_answer(amp: Amp01Context, reply: Reply, what: str) -> None:
    """``amp.expect_unknown_id_answer``, with a non-envelope answer filed as :func:`expect_error` does."""
    if reply.status in {status for status, _ in amp.conventions.unknown_id_answers()}:
        expect_envelope(amp, reply, what)
    amp.expect_unknown_id_answer(reply, what)


def expect_transition_refused(amp: Amp01Context, reply: Reply, what: str, requirement: str) -> None:
    """409 ``INVALID_TRANSITION``. Another status is ``requirement``'s finding (a refused creator is
    AMP-ACL-08's); a 409 with another code breaks the route status/code table (AMP-ERR-03), which
    ``requirement`` restates, so the finding is filed there."""
    wanted = "409 INVALID_TRANSITION"
    if reply.status != 409:
        if amp.creator_refused(reply):
            step_failed(amp, reply, what, requirement, wanted)
        message = f"{what} answered {reply.status}, not {wanted}"
        amp.fail(message, reply, expected=wanted, requirement=requirement)
    code = expect_envelope(amp, reply, what).get("code")
    amp.expect(
        code == "INVALID_TRANSITION",
        f"{what} answered 409 with error code {shown(code)}, not INVALID_TRANSITION",
        reply,
        expected=wanted,
        requirement="AMP-ERR-03",
    )


def expect_scoring_not_limited(amp: Amp01Context, reply: Reply, what: str) -> None:
    """A scoring PATCH the check needs, within the advertised budget: a 429 is a broken step. Whose?
    A fresh cell's first scoring PATCH tells: refused too, the budget is not the cell's own
    (AMP-RATE-07); accepted, this cell's budget is smaller than /spec advertises (AMP-CAP-08)."""
    if reply.status != 429:
        return
    fresh = amp.create_cell()
    shared = amp.as_agent("a").patch(f"/memories/{fresh['id']}", {"scoring": {"importance": 0.5}})
    own = shared.status != 429
    expect_step(
        amp,
        False,
        f"{what} answered 429: "
        + (
            "the cell's budget is smaller than the scoring_patch_limit /spec advertises"
            if own
            else "a fresh cell's first scoring PATCH is refused too, so the budget is not the cell's own"
        ),
        reply,
        step="a scoring PATCH within the cell's advertised budget",
        requirement="AMP-CAP-08" if own else "AMP-RATE-07",
        expected="200",
    )


@contextmanager
def about(requirement: str) -> Iterator[None]:
    """File the findings raised inside (by ``amp.expect_error`` and the like, which cannot know) under
    ``requirement``: for a check citing several ids, the one this part of the check asks about.
    A finding that already names its requirement, and a broken step, keep theirs."""
    try:
        yield
    except PreconditionFailed:
        raise
    except CheckFailure as failure:
        if failure.requirements:
            raise
        raise CheckFailure(
            failure.message, expected=failure.expected, exchange=failure.exchange, requirements=(requirement,)
        ) from None


def read(
    amp: Amp01Context, cell_id: str, *, role: str = "a", what: str = "reading the cell"
) -> tuple[dict[str, Any], Reply]:
    """GET a cell that must answer 200 with a valid cell (a step under AMP-READ-01)."""
    reply = amp.as_agent(role).get(f"/memories/{cell_id}")
    return read_of(amp, reply, what), reply


def read_of(amp: Amp01Context, reply: Reply, what: str = "reading the cell") -> dict[str, Any]:
    """The valid cell a read (already sent, e.g. by a shared step) answered, or a broken step under
    AMP-READ-01."""
    if reply.status != 200:
        step_failed(amp, reply, what, "AMP-READ-01", "200")
    return expect_valid_cell(amp, reply.json(), reply, f"the cell returned by {what}")


def read_back(amp: Amp01Context, cell_id: str, *, role: str = "a") -> tuple[dict[str, Any], Reply]:
    """GET a cell that must answer 200 with an object, not validated (the check judges what it needs).

    Note that a read by id is an access: it bumps access_count and restarts the decay clock."""
    reply = amp.as_agent(role).get(f"/memories/{cell_id}")
    return read_back_of(amp, reply), reply


def read_back_of(amp: Amp01Context, reply: Reply) -> dict[str, Any]:
    """The cell a read-back (already sent, e.g. by a shared step) answered: 200 with an object, or a
    broken step under AMP-READ-01."""
    if reply.status != 200:
        step_failed(amp, reply, "reading the cell back", "AMP-READ-01", "200")
    body = reply.json()
    if not isinstance(body, dict):
        step_failed(amp, reply, "reading the cell back (a JSON object)", "AMP-READ-01", "a cell")
    cell: dict[str, Any] = body
    return cell


def expect_deleted_read(amp: Amp01Context, cell_id: str, what: str) -> None:
    """GET of a deleted cell answers per the server's convention: 200 with status ``deleted`` or the
    unknown-id answer. While the convention is undetermined, either documented answer is accepted."""
    expect_deleted_read_of(amp, amp.as_agent("a").get(f"/memories/{cell_id}"), what)


def expect_reads_as_deleted(amp: Amp01Context, cell_id: str) -> None:
    """Right after a delete, the cell reads as deleted (AMP-DEL-06): the baseline a check needs before
    it asks whether something later changed the deleted cell. A wrong read blocks it under AMP-DEL-06."""
    expect_reads_as_deleted_of(amp, amp.as_agent("a").get(f"/memories/{cell_id}"), AFTER_DELETE)


def list_owner(
    amp: Amp01Context, owner_id: str, *, role: str = "a", **params: Any
) -> tuple[list[Any], Reply]:
    """``GET /memories?owner_id=...`` as ``role``: the ``results`` array (fails when there is none)."""
    reply = amp.as_agent(role).get("/memories", params={"owner_id": owner_id, **params})
    return listed_results(amp, reply), reply


def expect_validation_error(amp: Amp01Context, reply: Reply, what: str) -> None:
    """422 ``VALIDATION_ERROR`` in the error envelope (the shape of ``details.errors`` is AMP-ERR-04's)."""
    expect_refused_as_invalid(amp, reply, what)


def expect_refused_as_invalid(
    amp: Amp01Context, reply: Reply, what: str = "", *, details: bool = False, rule: str | None = None
) -> dict[str, Any]:
    """422 ``VALIDATION_ERROR``; returns the ``error`` object.

    Another status is the check's own finding, or ``rule``'s (a step, when the check asks something
    else of the refusal). A body that is not the envelope is AMP-ERR-01's, a framework's own shape
    AMP-ERR-05's; the code and, with ``details``, ``details.errors`` are AMP-ERR-04's."""
    what = what or f"{reply.exchange.method} {reply.exchange.url}"
    message = f"{what} answered {reply.status}, not 422 VALIDATION_ERROR"
    if rule is not None:
        expect_step(amp, reply.status == 422, message, reply, step=what, requirement=rule, expected="422")
    amp.expect(reply.status == 422, message, reply, expected="422 VALIDATION_ERROR")
    expect_envelope(amp, reply, what)
    with about("AMP-ERR-04"):
        if details:
            return amp.expect_validation_error(reply)
        return amp.expect_error(reply, 422, "VALIDATION_ERROR")


# lifecycle passes ---------------------------------------------------------------------------------

#: The statuses a cell can be listed with (deleted cells are never listed).
LISTED_STATUSES = ("active", "stale", "archived")
QUIET_INTERVAL = 60
"""A scheduler interval (s) long enough that a background pass during one check is unlikely."""
PASS_WHAT = "a lifecycle pass with the admin token"


def error_of(reply: Reply) -> Mapping[str, Any]:
    """The ``error`` object of a reply's envelope, or an empty mapping (a body that is not JSON, or
    not an envelope)."""
    try:
        body = reply.json()
    except AssertionError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def skip_if_admin_token_refused(amp: Amp01Context, reply: Reply) -> None:
    """A pass asked with the run's ``--admin-token`` answered 403: the server refuses the token the
    user gave, so no check that needs a pass can run, and none fails for it.

    ``ADMIN_DISABLED`` is the server saying its admin route is off (it has no token at all): the skip
    quotes its reason. Another 403 (``ACCESS_DENIED``) is a token the server refuses while it has one:
    from outside, a wrong ``--admin-token`` and a server refusing its own token look the same, and the
    first is by far the likelier, so it is a setup problem to fix, never a MUST failure. A server that
    takes wrong tokens is still caught: the refused-token checks (AMP-ADMIN-03) send wrong ones."""
    if reply.status != 403:
        return
    error = error_of(reply)
    code, said = error.get("code"), error.get("message")
    reason = f": {json.dumps(said)}" if isinstance(said, str) and said else ""
    answer = f"403 {code}" if isinstance(code, str) else "403"
    if code == "ADMIN_DISABLED":
        amp.skip(
            f"the server's admin route is disabled (a pass with --admin-token answered {answer}{reason}); "
            "the checks that need a lifecycle pass need a server started with an admin token"
        )
    amp.skip(
        f"the server refuses the given --admin-token (a pass with it answered {answer}{reason}): give "
        "the server's own admin token (a wrong token is a setup problem, not a finding)"
    )


def run_pass_reply(amp: Amp01Context, *, what: str = PASS_WHAT) -> Reply:
    """One manual pass through ``POST /lifecycle/run`` (skips without leave to run one, see
    ``amp.admin()``, or when the server refuses the token given, :func:`skip_if_admin_token_refused`):
    200 with a ``transitions`` object, or the check fails."""
    reply = amp.admin().post("/lifecycle/run")
    skip_if_admin_token_refused(amp, reply)
    if reply.status != 200:
        step_failed(amp, reply, what, "AMP-ADMIN-04", "200")
    body = reply.json()
    if not isinstance(body, dict) or not isinstance(body.get("transitions"), dict):
        step_failed(amp, reply, f"{what} (a transitions object)", "AMP-ADMIN-04", "a transitions object")
    return reply


def run_pass(amp: Amp01Context, *, what: str = PASS_WHAT) -> dict[str, Any]:
    """One manual pass; its ``transitions`` object (its exact shape is the admin area's business)."""
    transitions: dict[str, Any] = run_pass_reply(amp, what=what).json_object()["transitions"]
    return transitions


def scheduler_quiet(amp: Amp01Context) -> bool:
    """No scheduled pass is likely during a check: the scheduler is off or its interval is long.

    With a short interval a background pass may move the suite's cells between two requests, so the
    checks then judge statuses only and leave the per-pass counts (and in-between states) unasserted.
    """
    scheduler = amp.spec.get("lifecycle_scheduler")
    if not isinstance(scheduler, dict) or scheduler.get("enabled") is False:
        return True
    interval = scheduler.get("interval_seconds")
    return isinstance(interval, int | float) and interval >= QUIET_INTERVAL


def expect_at_least(amp: Amp01Context, transitions: dict[str, Any], key: str, least: int) -> None:
    """``transitions[key] >= least`` (the pass moved at least the suite's own cells), when quiet.

    The counts are AMP-ADMIN-05's rule, whichever check reads them."""
    value = transitions.get(key)
    if not scheduler_quiet(amp):
        amp.note(f"{key} = {shown(value)} not judged: a scheduled pass may have moved the cells first")
        return
    amp.expect(
        isinstance(value, int) and not isinstance(value, bool) and value >= least,
        f"{key} is {shown(value)}, fewer than the suite's {least} cell(s) the pass moved",
        expected=f">= {least}",
        requirement="AMP-ADMIN-05",
    )


def listings_by_status(amp: Amp01Context, owner: str) -> Iterator[tuple[str, Reply]]:
    """(status, 200 reply) of ``GET /memories?owner_id=…&status=…`` as agent "a", one status at a time.

    Lazy, so a caller that stops early sends no further request. Seeing a cell's status this way is
    never a by-id read, which would count as an access and restart the cell's decay clock."""
    client = amp.as_agent("a")
    for status in LISTED_STATUSES:
        reply = client.get("/memories", params={"owner_id": owner, "status": status})
        if reply.status != 200:
            step_failed(amp, reply, f"listing the owner's {status} cells", "AMP-LIST-03", "200")
        yield status, reply


def status_by_list(amp: Amp01Context, owner: str, cell_id: str) -> str | None:
    """The cell's status as list reports it (never a by-id read); None when no listing shows it."""
    for _status, reply in listings_by_status(amp, owner):
        for cell in reply.json_object().get("results", []):
            if isinstance(cell, dict) and cell.get("id") == cell_id:
                found = cell.get("lifecycle", {}).get("status")
                return str(found) if found is not None else None
    return None


# shared steps whose answers each check judges -----------------------------------------------------


class Marks:
    """Positions of a shared step's answers among the requests it sent (``amp.shared`` hands later
    checks those requests as evidence, so each check rebuilds the replies from its own evidence): the
    engine's :class:`~amp_conformance.engine.steps.Recorder`, for the steps whose values hold
    positions (a declared step reads its replies by label instead)."""

    def __init__(self, amp: Amp01Context) -> None:
        self._recorder = Recorder(amp.evidence.exchanges)

    def __call__(self, reply: Reply) -> int:
        at = self._recorder.position(reply)
        if at is None:
            raise ToolError("a shared step marked a reply it did not send")
        return at


def shared_replies(amp: Amp01Context, name: str, make: Callable[[Amp01Context], T]) -> tuple[T, list[Reply]]:
    """``amp.shared(name, make)`` and the replies of the requests that made it, in order (a value that
    holds :class:`Marks` positions indexes them)."""
    start = len(amp.evidence.exchanges)
    value = amp.shared(name, make)
    return value, [Reply(exchange) for exchange in amp.evidence.exchanges[start:]]


def open_route_reply(amp: Amp01Context, path: str) -> Reply:
    """One anonymous ``GET path`` of an open route (``/health``, ``/spec``), sent once per run and
    judged by every check that asks: the session's own (the preflight's, ``GET /spec``'s) when it sent
    it, the same request, else sent here."""
    _, replies = shared_replies(amp, f"open-route:{path}", lambda a: _open_route(a, path))
    return replies[-1]  # the attempt that answered: broken attempts before it are only evidence


def _open_route(amp: Amp01Context, path: str) -> None:
    sent = amp.session.open_route(path)
    if sent is None:
        amp.anonymous().get(path)
        return
    amp.evidence.exchanges.append(sent)
    amp.note(f"GET {path}: the request the run sent itself (preflight or /spec), not sent again")


def listed_results(amp: Amp01Context, reply: Reply) -> list[Any]:
    """The ``results`` of an owner's list already sent (e.g. by a shared step), judged as
    :func:`list_owner` judges its own: anything but 200 with a results array is a broken step."""
    if reply.status != 200:
        step_failed(amp, reply, "listing the owner's cells", "AMP-LIST-01", "200")
    body = reply.json()
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list):
        step_failed(amp, reply, "listing the owner's cells (a results array)", "AMP-LIST-01", "a page")
    assert isinstance(results, list)
    return results


def expect_deleted_read_of(amp: Amp01Context, reply: Reply, what: str) -> None:
    """:func:`expect_deleted_read` of a GET already sent (e.g. by a shared step): 200 with status
    ``deleted`` or the unknown-id answer, per the server's convention."""
    convention = amp.conventions.deleted_read
    if reply.status == 200 and convention != "hidden":
        status = expect_member(amp, reply.json_object(), "lifecycle.status", reply)
        amp.expect(status == "deleted", f"{what}: the deleted cell reads with status {shown(status)}", reply)
        return
    if convention == "readable":
        amp.expect_status(reply, 200, what=f"{what} (this server keeps deleted cells readable)")
    expect_unknown_id_answer(amp, reply, what)


#: The step a read right after a delete is: the baseline of the checks on a deleted cell.
AFTER_DELETE = "reading the cell right after its delete"


def expect_reads_as_deleted_of(amp: Amp01Context, reply: Reply, step: str = AFTER_DELETE) -> None:
    """:func:`expect_reads_as_deleted` of a GET already sent: a wrong read blocks the check under
    AMP-DEL-06 (the baseline a check needs before it asks whether something changed the cell)."""
    try:
        expect_deleted_read_of(amp, reply, step)
    except PreconditionFailed:
        raise
    except CheckFailure as failure:
        expect_step(
            amp, False, failure.message, None, step=step, requirement="AMP-DEL-06", expected=failure.expected
        )


def created_cell_of(reply: Reply) -> dict[str, Any] | None:
    """The cell a create answered: a 2xx JSON object with a string id, else None."""
    if not 200 <= reply.status < 300:
        return None
    try:
        cell = reply.json()
    except AssertionError:
        return None
    return cell if isinstance(cell, dict) and isinstance(cell.get("id"), str) else None
