"""Identities and secrets compare whole, byte for byte (AMP-LIST-03, SRCH-03, ACL-08/09, ADMIN-03).

An owner id, a creator id and an admin token are strings the server compares exactly: a variant in
letter case, a Unicode-normalised variant (a decomposed accent for a precomposed one) or a strict
prefix is another string. The owner filters of list and search, the owner and creator bypasses and
the admin gate are each probed with such a variant, which a server folding case or normalisation (or
comparing prefixes) lets through. And the creator's bypass (AMP-ACL-08) is not a grant the policy
holds: it survives the creator replacing both access lists. The case-variant and creator checks
share one cell (:func:`creators_cell`: the access policy check's, once that check is done with it).
"""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._support import error_of, expect_error, list_owner, member, shown
from amp_conformance.amp01.checks.access.steps import POLICY_CELL
from amp_conformance.engine.client import Reply
from amp_conformance.engine.steps import Recorder, Step

#: Appended to a fresh owner id: a precomposed letter (U+00E9), whose NFD form differs.
ACCENTED = "-caf\u00e9"


def _flip_first_letter(value: str) -> str | None:
    for position, char in enumerate(value):
        if char.swapcase() != char:
            return value[:position] + char.swapcase() + value[position + 1 :]
    return None


def _ids(results: list[Any]) -> set[Any]:
    return {r.get("id") for r in results if isinstance(r, dict)}


@pytest.mark.smoke
@check("AMP-LIST-03", "AMP-SRCH-03")
def test_owner_filters_match_the_owner_id_exactly(amp: Amp01Context) -> None:
    """List and search by a case-flipped or decomposed variant of an owner id do not return its cells."""
    owner = amp.owner() + ACCENTED
    text = "an owner id with an accent, filtered by its variants"
    cell = amp.create_cell(identity={"owner_id": owner}, content={"text": text})
    variants = {
        "case-flipped": _flip_first_letter(owner),
        "decomposed (NFD)": unicodedata.normalize("NFD", owner),
    }
    client = amp.as_agent("a")
    for label, variant in variants.items():
        if variant is None or variant == owner:
            amp.note(f"no {label} variant of {shown(owner)} exists")
            continue
        results, reply = list_owner(amp, variant)
        amp.expect(
            cell["id"] not in _ids(results),
            f"listing owner_id {shown(variant)} ({label}) returned the cell of owner {shown(owner)}: "
            "owner_id is an exact match",
            reply,
            expected="no cell of the other owner",
            requirement="AMP-LIST-03",
        )
        search = {"query": text, "owner_id": variant, "limit": min(100, amp.max_page_size)}
        found = client.post("/memories/search", search)
        body = found.json() if found.status == 200 else None
        hits = body.get("results") if isinstance(body, dict) else None
        if not isinstance(hits, list):
            amp.note(f"search by the {label} owner id answered {found.status} without results: not judged")
            continue
        amp.expect(
            cell["id"] not in _ids(hits),
            f"search with owner_id {shown(variant)} ({label}) returned the cell of owner {shown(owner)}",
            found,
            expected="no cell of the other owner",
            requirement="AMP-SRCH-03",
        )


def creators_cell(amp: Amp01Context) -> dict[str, Any]:
    """One cell created by agent "a" for a fresh owner (so the creator is not the owner), under a policy
    naming neither the creator's nor the owner's case variants, for the case-variant check, which only
    reads it and is refused a write, and then the creator check, which replaces its policy and writes
    it (the last to use it, in module order). Neither verdict depends on the other's effect: a
    variant's write, taken by a server folding case, changes the content the creator then writes
    anyway, and a policy naming "<creator>-someone-else" admits no case variant of the creator or
    owner under any rule.

    When the access policy check (AMP-ACL-12) has already made its cell in this run (this worker: the
    three checks declare it, so a parallel run keeps them in one unit), that cell is taken over
    (``access.steps.POLICY_CELL``); else (a selection without the policy check) the two checks share
    a default-policy cell of their own (never the policy check's: it must find its cell unedited)."""
    if POLICY_CELL.made(amp):
        return POLICY_CELL(amp).value
    return CREATORS_CELL(amp).value


def _make_creators_cell(amp: Amp01Context, rec: Recorder) -> dict[str, Any]:
    owner = amp.owner()
    return {"owner": owner, "cell": amp.create_cell(identity={"owner_id": owner})}


#: The two checks' own cell, when the policy check's is not theirs to take (:func:`creators_cell`).
CREATORS_CELL: Step[Amp01Context, dict[str, Any], Reply] = Step(
    "identity:creators-cell", _make_creators_cell, roles=("a",), reply=Reply
)


def _refused(reply: Reply) -> bool:
    """401 (keys mode: the variant is no keyed agent), 403, or 404 (C-01) are all a refusal here."""
    return reply.status in (401, 403, 404)


@pytest.mark.smoke
@check("AMP-ACL-09", uses=(POLICY_CELL, CREATORS_CELL))
def test_a_case_variant_of_the_owner_or_creator_is_a_stranger(amp: Amp01Context) -> None:
    """An agent whose id differs from the owner's or the creator's only in letter case has no access.

    With API keys the creator's variant is sent with the creator's own key (a server folding case in
    its key lookup and its bypass lets it in); the owner is no keyed agent, so only keyless runs try it."""
    creator = amp.agent("a")
    made = creators_cell(amp)
    cell, owner = made["cell"], made["owner"]
    path = f"/memories/{cell['id']}"
    pairs = [("creator", creator.id)] + ([] if amp.keys_mode else [("owner", owner)])
    for label, original in pairs:
        variant = _flip_first_letter(original)
        if variant is None:
            amp.note(f"the {label} id {shown(original)} has no letter: no case variant")
            continue
        headers = {"X-AMP-Agent-ID": variant}
        if creator.key is not None and label == "creator":
            headers["X-AMP-API-Key"] = creator.key
        client = amp.with_headers(headers)
        read = client.get(path)
        amp.expect(
            _refused(read),
            f"agent {shown(variant)} read a cell whose {label} is {shown(original)} "
            f"(no policy entry names it): GET answered {read.status}",
            read,
            expected="403",
        )
        if label == "creator":
            write = client.patch(path, {"content": {"text": "written by a case variant of the creator"}})
            amp.expect(
                _refused(write),
                f"agent {shown(variant)} wrote a cell created by {shown(original)} "
                f"(no policy entry names it): PATCH answered {write.status}",
                write,
                expected="403",
            )


@pytest.mark.smoke
@check("AMP-ACL-08", uses=(POLICY_CELL, CREATORS_CELL))
def test_the_creator_keeps_its_rights_after_replacing_the_policy(amp: Amp01Context) -> None:
    """After the creator replaces readable_by and writable_by with other agents, it still reads and writes."""
    other = amp.agent_id("a") + "-someone-else"
    cell = creators_cell(amp)["cell"]  # a fresh owner: the creator is not the owner
    path = f"/memories/{cell['id']}"
    client = amp.as_agent("a")
    policy = {"access_policy": {"readable_by": [other], "writable_by": [other], "public": False}}
    edit = client.patch(path, policy)
    amp.expect_status(edit, 200, what="the creator replacing readable_by and writable_by")
    read = client.get(path)
    amp.expect(
        read.status == 200,
        f"after replacing the access lists the creator's GET answered {read.status}",
        read,
        expected="200",
    )
    write = client.patch(path, {"content": {"text": "still the creator's to write"}})
    amp.expect(
        write.status == 200,
        f"after replacing the access lists the creator's PATCH answered {write.status}",
        write,
        expected="200",
    )
    if write.status == 200:
        text = member(write.json_object(), "content.text")
        amp.expect(text == "still the creator's to write", f"content.text is {shown(text)}", write)


@pytest.mark.smoke
@check("AMP-ADMIN-03", global_effects=True)
def test_a_prefix_of_the_admin_token_is_refused(amp: Amp01Context) -> None:
    """The admin token is compared whole: its strict prefix gets 403 ACCESS_DENIED, not a pass."""
    secret = amp.session.options.admin_token
    if secret is None:
        amp.skip("needs the admin token (--admin-token) to build a prefix of it")
    if not amp.session.options.allow_global_effects:  # a server that takes the prefix runs a pass
        amp.skip("may run a store-wide lifecycle pass: give --allow-global-effects to allow it")
    if len(secret) < 2:
        amp.skip("the admin token is one character long: it has no non-empty strict prefix")
    reply = amp.with_headers({"X-AMP-Admin-Token": secret[:-1]}).post("/lifecycle/run")
    if reply.status == 403 and error_of(reply).get("code") == "ADMIN_DISABLED":
        amp.skip("the server's admin route is disabled (403 ADMIN_DISABLED): no token can be compared")
    amp.expect(
        reply.status != 200,
        "the admin token without its last character ran a lifecycle pass",
        reply,
        expected="403",
    )
    expect_error(amp, reply, 403, "ACCESS_DENIED")
