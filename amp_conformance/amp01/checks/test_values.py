"""Values as sent: text stored unnormalised, types not coerced, JSON with a media type parameter.

Three rules no other check feeds an input able to break: ``content.text`` round-trips character for
character, compatibility characters and decomposed sequences included (AMP-CELL-17); a string where
the schema wants a number, and ``"true"`` or ``1`` where it wants a boolean, are refused with 422
rather than coerced (AMP-ERR-04); and ``application/json; charset=utf-8`` is JSON (RFC 9110 §8.3: a
media type may carry parameters), so a valid body labelled so is served (AMP-CRE-01, AMP-PATCH-01,
AMP-SRCH-01).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._shared_cells import SCORING_NULL, UNNORMALISED, odd_cell, odd_creates
from amp_conformance.amp01.checks._support import (
    create_step,
    created,
    expect_refused_as_invalid,
    expect_valid_cell,
    member,
    read_back,
    remember_created,
    shown,
)


@pytest.mark.smoke
@check("AMP-CELL-17")
def test_text_is_stored_exactly_as_sent(amp: Amp01Context) -> None:
    """content.text with compatibility characters and decomposed accents round-trips unchanged."""
    # the run's scoring-null create of AMP-ERR-07 carries this text (its create answer is all that
    # check judges; the error probes archive its cell, which changes no text): judged here as a
    # create of our own is, and read back; a create of our own when it made no cell
    odd = odd_creates(amp)
    reply = dict(odd[1])[SCORING_NULL]
    if odd_cell(amp, odd, SCORING_NULL) is not None:
        create_step(amp, reply, "creating a cell")
        cell = expect_valid_cell(amp, reply.json(), reply, "the cell returned by creating a cell")
    else:
        cell, reply = created(amp, amp.cell_body(content={"text": UNNORMALISED}))
    stored, back = read_back(amp, cell["id"])
    for label, body, where in (("the 201", cell, reply), ("a GET", stored, back)):
        text = member(body, "content.text")
        amp.expect(
            text == UNNORMALISED,
            f"{label} shows content.text {shown(text)}, not the text sent, {shown(UNNORMALISED)}",
            where,
            expected=json.dumps(UNNORMALISED),
        )


#: Create-body overrides each holding a value of the wrong JSON type that a loose parser would coerce.
MISTYPED: tuple[tuple[str, dict[str, Any]], ...] = (
    ('scoring.importance "0.5" (a string)', {"scoring": {"importance": "0.5"}}),
    ('access_policy.public "true" (a string)', {"access_policy": {"public": "true"}}),
    ("access_policy.public 1 (a number)", {"access_policy": {"public": 1}}),
)


@pytest.mark.smoke
@check("AMP-ERR-04")
def test_values_of_the_wrong_type_are_not_coerced(amp: Amp01Context) -> None:
    """A numeric string for a number, "true" or 1 for a boolean: 422 VALIDATION_ERROR, nothing coerced."""
    client = amp.as_agent("a")
    bodies = [amp.cell_body(override) for _, override in MISTYPED]
    # sent at once (amp.at_once): refusals, none meets what another did; judged in order
    replies = amp.at_once(*(partial(client.post, "/memories", body) for body in bodies))
    for reply in replies:
        remember_created(amp, reply, "a")
    for (label, _), reply in zip(MISTYPED, replies, strict=True):
        if reply.status >= 500:  # no evidence of coercion: the server failed; blocked under its error
            amp.precondition_failed(
                f"a create with {label} answered {reply.status}, a server error: whether the value is "
                "coerced or refused cannot be told",
                reply,
                step=f"a create with {label}",
                requirement=amp.run.protocol.server_error_requirement or "AMP-ERR-07",
                expected="422 VALIDATION_ERROR",
            )
        accepted = 200 <= reply.status < 300
        outcome = "the value was coerced, not refused" if accepted else "not 422 VALIDATION_ERROR"
        amp.expect(
            reply.status == 422,
            f"a create with {label} answered {reply.status}: {outcome}",
            reply,
            expected="422 VALIDATION_ERROR",
        )
        if reply.status == 422:
            expect_refused_as_invalid(amp, reply, f"a create with {label}")


CHARSET = "application/json; charset=utf-8"


@pytest.mark.smoke
@check("AMP-CRE-01", "AMP-PATCH-01", "AMP-SRCH-01")
def test_json_with_a_charset_parameter_is_json(amp: Amp01Context) -> None:
    """A valid create, PATCH and search labelled application/json; charset=utf-8 are served (201, 200)."""
    client = amp.as_agent("a")
    headers = {"Content-Type": CHARSET}

    def raw(value: Any) -> bytes:
        return json.dumps(value).encode("utf-8")

    body = amp.cell_body()
    made = client.request("POST", "/memories", content=raw(body), headers=headers)
    remember_created(amp, made, "a")
    amp.expect_status(made, 201, what=f"a create labelled {CHARSET}", requirement="AMP-CRE-01")
    cell = made.json_object()
    edit = raw({"content": {"text": "patched"}})
    patched = client.request("PATCH", f"/memories/{cell['id']}", content=edit, headers=headers)
    if amp.creator_refused(patched):  # the creator's access is AMP-ACL-08's question, a step here
        amp.creator_step_failed(f"the creator's PATCH answered {patched.status}", patched)
    amp.expect_status(patched, 200, what=f"a PATCH labelled {CHARSET}", requirement="AMP-PATCH-01")
    search = {"query": "patched", "owner_id": body["identity"]["owner_id"]}
    found = client.request("POST", "/memories/search", content=raw(search), headers=headers)
    amp.expect_status(found, 200, what=f"a search labelled {CHARSET}", requirement="AMP-SRCH-01")
