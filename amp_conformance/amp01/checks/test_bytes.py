"""The byte level (area ``bytes``): request bodies that are not well-formed JSON requests.

Every other area sends well-formed JSON. Real servers also meet bytes that are not UTF-8, a byte-order
mark, a lone surrogate in any string member (escaped or as raw bytes), truncated text, duplicate
member names, numbers beyond any float, nesting 10,000 deep, a wrong or missing Content-Type, an
empty body, and a body on a GET. Each shape is its own check, sent to each
write route (POST /memories, PATCH /memories/{id}, POST /memories/search), so a report says which
shape broke where.

What is required (MUST), whatever the shape: no 5xx and no answer outside the route's documented
statuses (AMP-ERR-03; a 5xx is also an AMP-ERR-07 warning); every refusal in the AMP envelope, as
``application/json`` with a SCREAMING_SNAKE code (AMP-ERR-01, -02), never a framework's own shape
(AMP-ERR-05); a 422 says ``VALIDATION_ERROR`` (AMP-ERR-03) with ``details.errors`` (AMP-ERR-04).

Which refusal: the spec names 422 ``VALIDATION_ERROR`` for a body that is not JSON (AMP-CRE-10, a
SHOULD) and is silent on media types, so every 4xx a source documents is accepted: 422 (S1, the
upstream server), 400 for malformed syntax and 415 for an unsupported media type (HTTP, RFC 9110
§15.5.1 and §15.5.16), 413 for nesting too deep to keep. Another 4xx than 422 for a body that is not
JSON is a warning under AMP-CRE-10 on create. Where the bytes are a JSON text a server may read (a
byte-order mark, which RFC 8259 §8.1 lets a parser ignore; duplicate names, whose meaning RFC 8259 §4
leaves open; huge numbers, which §6 lets it limit; deep nesting, which §9 lets it limit; no
Content-Type, which the upstream server reads as JSON) a 2xx is accepted too. Accepting bytes that
are not JSON, or JSON labelled as plain text or a form, is a warning under AMP-CRE-10 (a text/plain
POST is what a browser sends cross-origin without a preflight).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._shared_cells import (
    ACCESS_POLICY_NULL,
    minimal_cell,
    odd_cell,
    odd_creates,
)
from amp_conformance.amp01.checks._support import expect_step, remember_created
from amp_conformance.amp01.envelope import envelope_problems, validation_error_problems
from amp_conformance.engine.client import Reply
from amp_conformance.engine.outcomes import TransportFailure

AREA = "bytes"
IDS = ("AMP-ERR-03", "AMP-ERR-01", "AMP-ERR-02", "AMP-ERR-04", "AMP-ERR-05", "AMP-CRE-10", "AMP-ERR-07")
MARKER = "amp-ct-bytes-slot"
"""A string in the valid body that each shape replaces by its own bytes (quotes included)."""
DEPTH = 10_000
HUGE_INTEGER = "9" * 400

#: Refusals a source documents (see the module docstring).
NOT_JSON = (400, 415, 422)
MALFORMED = (400, 422)
TOO_DEEP = (400, 413, 422)


@dataclass(frozen=True)
class Route:
    """A write route and how to fill its body: ``text`` is a string member, ``value`` a member that
    takes any JSON (metadata on create and PATCH; ``offset`` on search, which must be refused or
    honoured as the number it is)."""

    name: str
    method: str

    @property
    def label(self) -> str:
        path = {"create": "/memories", "patch": "/memories/{id}", "search": "/memories/search"}[self.name]
        return f"{self.method} {path}"

    def path(self, amp: Amp01Context) -> str:
        """The route's path; PATCH goes to the module's shared target cell."""
        if self.name == "patch":
            return f"/memories/{_patch_target(amp)['id']}"
        return "/memories/search" if self.name == "search" else "/memories"

    def body(self, amp: Amp01Context, slot: str) -> dict[str, Any]:
        text = MARKER if slot == "text" else "bytes-level probe"
        value = MARKER if slot == "value" else None
        if self.name == "search":
            body: dict[str, Any] = {"query": text, "owner_id": amp.owner(), "limit": 5}
            if value is not None:
                body["offset"] = value
            return body
        content: dict[str, Any] = {"text": text}
        if value is not None:
            content["metadata"] = {"probe": value}
        return amp.cell_body(content=content) if self.name == "create" else {"content": content}


def _patch_target(amp: Amp01Context) -> dict[str, Any]:
    """The one cell every PATCH probe is sent to (made once per run, per worker): the run's plain
    cell of AMP-ERR-07's create with access_policy null, or a fresh one when that made none.

    Only its content can change (a probe a server reads as JSON rewrites ``content.text`` or
    ``content.metadata.probe``), and no check judges the content or reads the cell: each judges its
    own PATCH answer. A value a server may keep but not write back (a number beyond any float, deep
    nesting) is replaced right away by :func:`_restore`, so a crash it leaves behind is found by the
    check that sent it, never blamed on another shape."""

    # the access_policy-null cell of AMP-ERR-07's odd creates (a cell of "a" made anyway, whose create
    # answer alone is judged, never read or changed afterwards), taken from the shared step itself in
    # every check (so that in a parallel run each worker learns who created it); a fresh cell without it
    try:
        cell = odd_cell(amp, odd_creates(amp), ACCESS_POLICY_NULL)
    except TransportFailure:  # an answer of the odd creates lost: AMP-ERR-07's error, not the probes'
        cell = None
    if cell is not None:
        return cell
    return amp.shared("bytes:patch-target", lambda a: a.create_cell())


def _restore(amp: Amp01Context, route: Route, path: str, reply: Reply, what: str) -> None:
    """After a PATCH that stored an odd value in ``content.metadata.probe``, write a plain string back:
    the cell must still take a valid PATCH (a 5xx there is this shape's crash, AMP-ERR-03). The PATCH
    carries ``content.text`` as well (requirements.md C-20: whether ``content`` without ``text`` is
    accepted is open, so the suite always sends it)."""
    if route.name != "patch" or not 200 <= reply.status < 300:
        return
    # C-20's stance: a PATCH of content always sends text (the upstream contract refuses one without)
    restored = {"content": {"text": "bytes-level probe", "metadata": {"probe": "restored"}}}
    again = amp.as_agent("a").patch(path, restored)
    after = f"a valid PATCH of the cell after {what} was accepted"
    if again.status >= 500:
        amp.fail(
            f"{after} answered {again.status}: the value it kept broke the cell (AMP-ERR-03)",
            again,
            expected="200",
            requirement="AMP-ERR-03",
        )
    expect_step(
        amp,
        again.status == 200,
        f"{after} answered {again.status}, not 200",
        again,
        step=after,
        requirement="AMP-PATCH-01",
        expected="200",
    )


ROUTES = (Route("create", "POST"), Route("patch", "PATCH"), Route("search", "POST"))
#: The smoke tier sends each shape once, to create: each shape is a parser path of its own (one probe
#: per shape tells), the other routes reach the same parser.
SMOKE_ROUTE = "create"
by_route = pytest.mark.parametrize(
    "route", [pytest.param(r, id=r.name, marks=[pytest.mark.smoke] * (r.name == SMOKE_ROUTE)) for r in ROUTES]
)


def _bytes_with(amp: Amp01Context, route: Route, slot: str, replacement: bytes) -> bytes:
    """The route's valid body as compact UTF-8 JSON, with the marker replaced by ``replacement``."""
    raw = json.dumps(route.body(amp, slot), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    marker = json.dumps(MARKER).encode("utf-8")
    assert raw.count(marker) == 1, "the marker occurs once"
    return raw.replace(marker, replacement)


def _valid_bytes(amp: Amp01Context, route: Route) -> bytes:
    return json.dumps(route.body(amp, "none"), separators=(",", ":")).encode("utf-8")


def _send(
    amp: Amp01Context, route: Route, path: str, body: bytes, content_type: str | None = "application/json"
) -> Reply:
    reply = amp.as_agent("a").request(
        route.method, path, content=body, headers={"Content-Type": content_type}
    )
    if route.name == "create":
        remember_created(amp, reply, "a")
    return reply


def _judge(
    amp: Amp01Context,
    reply: Reply,
    what: str,
    *,
    refusals: tuple[int, ...],
    success: str,
    not_json: bool,
    route: str,
) -> None:
    """Hold one answer to the family's rules. ``success``: "accept" (a 2xx is a documented reading of
    the bytes) or "warn" (a 2xx breaks AMP-CRE-10's SHOULD)."""
    status = reply.status
    allowed = "/".join(str(s) for s in sorted(refusals))
    if status >= 500:
        answer = "read or refused" if success == "accept" else "refused"
        amp.fail(
            f"{what} answered {status}: it must be {answer} with a 4xx ({allowed}) in the error envelope, "
            "never a 5xx (AMP-ERR-03)",
            reply,
            expected=f"{allowed} in the AMP error envelope",
            requirement="AMP-ERR-03",
        )
    if 200 <= status < 300:
        if success == "accept":
            amp.note(f"{what} was accepted ({status})")
        else:
            amp.warn(
                f"{what} was accepted ({status}); AMP-CRE-10 asks for 422 VALIDATION_ERROR",
                reply,
                requirements=("AMP-CRE-10",),
            )
        return
    if not 400 <= status < 500:
        amp.fail(
            f"{what} answered {status}, neither a success nor a 4xx refusal",
            reply,
            expected=allowed,
            requirement="AMP-ERR-03",
        )
    _expect_envelope(amp, reply, what)
    if status not in refusals and amp.creator_refused(reply):
        amp.creator_step_failed(f"{what} answered {status}", reply)  # AMP-ACL-08's, not this check's
    amp.expect(
        status in refusals,
        f"{what} was refused with {status}, which no source documents for it",
        reply,
        expected=allowed,
        requirement="AMP-ERR-03",
    )
    if status == 422:
        problems = validation_error_problems(reply.json())
        code_problems = [p for p in problems if p.startswith("error.code")]
        amp.expect(
            not code_problems,
            f"{what}: 422 with " + "; ".join(code_problems),
            reply,
            expected="422 VALIDATION_ERROR",
            requirement="AMP-ERR-03",
        )
        amp.expect(not problems, f"{what}: 422 body: " + "; ".join(problems), reply, requirement="AMP-ERR-04")
    elif not_json and route == "create":
        amp.warn(
            f"{what} was refused with {status}; AMP-CRE-10 names 422 VALIDATION_ERROR",
            reply,
            requirements=("AMP-CRE-10",),
        )


def _expect_envelope(amp: Amp01Context, reply: Reply, what: str) -> None:
    """A refusal is application/json in the AMP envelope, never a framework's shape or a page."""
    content_type = reply.headers.get("content-type", "")
    amp.expect(
        content_type.split(";")[0].strip().lower() == "application/json",
        f"{what} was refused with Content-Type {json.dumps(content_type) if content_type else '(none)'}, "
        "not application/json",
        reply,
        expected="application/json",
        requirement="AMP-ERR-01",
    )
    try:
        body = json.loads(reply.content)
    except (ValueError, RecursionError):
        amp.fail(f"{what} was refused with a body that is not JSON", reply, requirement="AMP-ERR-01")
    amp.expect(
        not (isinstance(body, dict) and "detail" in body and "error" not in body),
        f"{what} was refused in a framework's own shape (a top-level 'detail'), not the AMP envelope",
        reply,
        requirement="AMP-ERR-05",
    )
    problems = envelope_problems(body, require_details=False)
    code_format = [p for p in problems if "SCREAMING_SNAKE_CASE" in p]
    amp.expect(not code_format, f"{what}: " + "; ".join(code_format), reply, requirement="AMP-ERR-02")
    amp.expect(
        not problems,
        f"{what} was refused without the AMP envelope: " + "; ".join(problems),
        reply,
        requirement="AMP-ERR-01",
    )


# the shapes ------------------------------------------------------------------------------------


@check(*IDS, area=AREA)
@by_route
def test_bytes_that_are_not_utf8(amp: Amp01Context, route: Route) -> None:
    """A body with a byte that is not UTF-8 (Latin-1 'é') is refused with a 4xx in the envelope."""
    path = route.path(amp)
    reply = _send(amp, route, path, _bytes_with(amp, route, "text", b'"caf\xe9"'))
    what = f"{route.label} with a Latin-1 byte (0xE9) in a string"
    _judge(amp, reply, what, refusals=NOT_JSON, success="warn", not_json=True, route=route.name)


@check(*IDS, area=AREA)
@by_route
def test_byte_order_mark(amp: Amp01Context, route: Route) -> None:
    """A body starting with a UTF-8 byte-order mark is read as the JSON after it or refused (envelope)."""
    path = route.path(amp)
    reply = _send(amp, route, path, b"\xef\xbb\xbf" + _valid_bytes(amp, route))
    what = f"{route.label} starting with a UTF-8 byte-order mark"
    _judge(amp, reply, what, refusals=NOT_JSON, success="accept", not_json=False, route=route.name)


@check(*IDS, area=AREA)
@by_route
def test_truncated_json(amp: Amp01Context, route: Route) -> None:
    """A body cut off in the middle of its JSON (inside a string) is refused with a 4xx in the envelope."""
    path = route.path(amp)
    whole = _bytes_with(amp, route, "text", b'"cut off in the mid')
    reply = _send(amp, route, path, whole[: whole.index(b"cut off in the mid") + len(b"cut off in the mid")])
    what = f"{route.label} with JSON cut off inside a string"
    _judge(amp, reply, what, refusals=MALFORMED, success="warn", not_json=True, route=route.name)


@check(*IDS, area=AREA)
@by_route
def test_duplicate_member_names(amp: Amp01Context, route: Route) -> None:
    """A body naming one member twice with two values is read one way or refused, never a 5xx."""
    path = route.path(amp)
    member = "query" if route.name == "search" else "text"
    body = _bytes_with(amp, route, "text", f'"first value","{member}":"second value"'.encode())
    reply = _send(amp, route, path, body)
    what = f'{route.label} naming "{member}" twice'
    _judge(amp, reply, what, refusals=MALFORMED, success="accept", not_json=False, route=route.name)


@check(*IDS, area=AREA, scope="numbers")
@by_route
@pytest.mark.parametrize("number", ["1e400", "-1e400", HUGE_INTEGER], ids=["1e400", "-1e400", "400-digits"])
def test_numbers_beyond_any_float(amp: Amp01Context, route: Route, number: str) -> None:
    """A number no double can hold (1e400, a 400-digit integer) is kept, or refused in the envelope."""
    path = route.path(amp)
    reply = _send(amp, route, path, _bytes_with(amp, route, "value", number.encode()))
    shown = number if len(number) < 20 else f"a {len(number)}-digit integer"
    what = f"{route.label} with the number {shown}"
    _judge(amp, reply, what, refusals=MALFORMED, success="accept", not_json=False, route=route.name)
    _restore(amp, route, path, reply, what)


#: Every string member each route takes: (route, dotted path; a number indexes an array).
#: The one member the smoke tier sends a lone surrogate in.
SMOKE_MEMBER = ("create", "content.text")
STRING_MEMBERS: tuple[tuple[str, str], ...] = (
    ("create", "type"),
    ("create", "content.text"),
    ("create", "content.metadata.probe"),
    ("create", "identity.owner_id"),
    ("create", "identity.owner_type"),
    ("create", "identity.session_id"),
    ("create", "provenance.source_type"),
    ("create", "provenance.source_ref"),
    ("patch", "content.text"),
    ("patch", "content.metadata.probe"),
    ("patch", "lifecycle.status"),
    ("search", "query"),
    ("search", "owner_id"),
    ("search", "types.0"),
)
#: U+D800 alone, as the JSON escape (valid JSON syntax whose string no UTF-8 can hold, RFC 8259 §8.2)
#: and as the three bytes it would take if encoded anyway (not UTF-8, RFC 3629 §3).
SURROGATES = {"escaped": b"\\ud800", "raw": b"\xed\xa0\x80"}


def _string_member_body(amp: Amp01Context, route: Route, member: str) -> dict[str, Any]:
    """A valid body of ``route`` that has ``member``, whose value is :data:`MARKER`-tagged below."""
    body = route.body(amp, "none")
    if route.name == "create":
        body["identity"]["session_id"] = "bytes-session"
        body["provenance"] = {"source_type": "document", "source_ref": "bytes-ref"}
        body["content"]["metadata"] = {"probe": "bytes"}
    elif route.name == "patch" and member.startswith("lifecycle."):
        body = {"lifecycle": {"status": "active"}}
    elif route.name == "patch":
        body["content"]["metadata"] = {"probe": "bytes"}
    elif route.name == "search":
        body["types"] = ["semantic"]
    return body


def _with_surrogate(amp: Amp01Context, route: Route, member: str, surrogate: bytes) -> bytes:
    """The body with ``surrogate`` appended to the string at ``member`` (the rest of it unchanged)."""
    body = _string_member_body(amp, route, member)
    *parents, last = member.split(".")
    holder: Any = body
    for part in parents:
        holder = holder[int(part)] if part.isdigit() else holder[part]
    key: Any = int(last) if last.isdigit() else last
    value = holder[key]
    holder[key] = MARKER
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    marker = json.dumps(MARKER).encode("utf-8")
    assert raw.count(marker) == 1, "the marker occurs once"
    return raw.replace(marker, json.dumps(value, ensure_ascii=False).encode("utf-8")[:-1] + surrogate + b'"')


by_string_member = pytest.mark.parametrize(
    ("route_name", "member"),
    [
        pytest.param(
            route,
            member,
            id=f"{route}-{member}",
            marks=[pytest.mark.smoke] * ((route, member) == SMOKE_MEMBER),
        )
        for route, member in STRING_MEMBERS
    ],
)


def _send_surrogate(amp: Amp01Context, route_name: str, member: str, form: str) -> tuple[Route, str, Reply]:
    route = next(r for r in ROUTES if r.name == route_name)
    path = route.path(amp)
    return route, path, _send(amp, route, path, _with_surrogate(amp, route, member, SURROGATES[form]))


@check(*IDS, area=AREA, scope="surrogates")
@by_string_member
def test_lone_surrogate_in_a_string(amp: Amp01Context, route_name: str, member: str) -> None:
    """A string holding a lone surrogate escape ("\\ud800") is kept or refused in the envelope, never a
    crash."""
    route, path, reply = _send_surrogate(amp, route_name, member, "escaped")
    # valid JSON syntax; RFC 8259 §8.2 leaves what a receiver does with it unpredictable
    what = f'{route.label} with "\\ud800" (a lone surrogate escape) in {member}'
    _judge(amp, reply, what, refusals=MALFORMED, success="accept", not_json=False, route=route.name)
    _restore(amp, route, path, reply, what)


@check(*IDS, area=AREA, scope="surrogates")
@by_string_member
def test_lone_surrogate_bytes_in_a_string(amp: Amp01Context, route_name: str, member: str) -> None:
    """A string holding the bytes of a lone surrogate (ED A0 80, not UTF-8) is refused in the envelope."""
    route, path, reply = _send_surrogate(amp, route_name, member, "raw")
    what = f"{route.label} with the bytes ED A0 80 (a lone surrogate, not UTF-8) in {member}"
    _judge(amp, reply, what, refusals=NOT_JSON, success="warn", not_json=True, route=route.name)
    _restore(amp, route, path, reply, what)


@check(*IDS, area=AREA, scope="numbers")
@by_route
def test_deep_nesting(amp: Amp01Context, route: Route) -> None:
    """A body nesting arrays 10,000 deep is kept or refused in the envelope, never a crash."""
    path = route.path(amp)
    nested = b"[" * DEPTH + b"]" * DEPTH
    reply = _send(amp, route, path, _bytes_with(amp, route, "value", nested))
    what = f"{route.label} nesting arrays {DEPTH:,} deep"
    _judge(amp, reply, what, refusals=TOO_DEEP, success="accept", not_json=False, route=route.name)
    _restore(amp, route, path, reply, what)


@check(*IDS, area=AREA)
@by_route
@pytest.mark.parametrize("media_type", ["text/plain", "application/x-www-form-urlencoded"])
def test_wrong_content_type(amp: Amp01Context, route: Route, media_type: str) -> None:
    """A JSON body labelled text/plain or as a form is refused in the envelope (accepting it warns)."""
    path = route.path(amp)
    reply = _send(amp, route, path, _valid_bytes(amp, route), content_type=media_type)
    what = f"{route.label} with Content-Type {media_type}"
    _judge(amp, reply, what, refusals=NOT_JSON, success="warn", not_json=False, route=route.name)


@check(*IDS, area=AREA)
@by_route
def test_missing_content_type(amp: Amp01Context, route: Route) -> None:
    """A JSON body without a Content-Type is read as JSON or refused in the envelope, never a 5xx."""
    path = route.path(amp)
    reply = _send(amp, route, path, _valid_bytes(amp, route), content_type=None)
    what = f"{route.label} without a Content-Type"
    _judge(amp, reply, what, refusals=NOT_JSON, success="accept", not_json=False, route=route.name)


@check(*IDS, area=AREA)
@by_route
def test_empty_body(amp: Amp01Context, route: Route) -> None:
    """An empty body labelled application/json is refused with a 4xx in the envelope."""
    path = route.path(amp)
    reply = _send(amp, route, path, b"")
    what = f"{route.label} with an empty body"
    _judge(amp, reply, what, refusals=NOT_JSON, success="warn", not_json=True, route=route.name)


@check("AMP-ERR-03", "AMP-ERR-01", "AMP-ERR-05", "AMP-ERR-07", area=AREA, scope="numbers")
@pytest.mark.parametrize("target", [pytest.param("read", marks=pytest.mark.smoke), "list"])
def test_body_on_get(amp: Amp01Context, target: str) -> None:
    """A GET carrying a JSON body is served as if it had none, or refused in the envelope; never a 5xx."""
    cell = minimal_cell(amp)["cell"]  # the run's shared minimal cell: read and listed, never patched
    owner = cell["identity"]["owner_id"] if isinstance(cell.get("identity"), dict) else amp.owner()
    body = json.dumps({"owner_id": amp.owner(), "limit": 1, "status": "deleted"}).encode()
    client = amp.as_agent("a")
    if target == "read":
        path, params = f"/memories/{cell['id']}", None
    else:
        path, params = "/memories", {"owner_id": owner}
    reply = client.request("GET", path, content=body, params=params)
    what = f"GET {'/memories/{id}' if target == 'read' else '/memories'} with a JSON body"
    _judge(amp, reply, what, refusals=NOT_JSON, success="accept", not_json=False, route=target)
    if reply.status == 200:
        answer = reply.json_object()
        if target == "read":
            served = answer.get("id") == cell["id"]
        else:
            results = answer.get("results")
            served = isinstance(results, list) and any(
                isinstance(r, dict) and r.get("id") == cell["id"] for r in results
            )
        if not served:
            amp.warn(f"{what} was not served as without it: the body's parameters were applied", reply)
