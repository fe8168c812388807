"""Access control (AMP-ACL-*): the data-driven access matrix, and policy changes, refusals and body tricks.

The matrix lives in ``fixtures/access/matrix.json``. Each vector is one check: agent "a" creates a cell
with the vector's owner and policy, then the vector's caller tries every surface. Read is seen through GET
by id, search and list (the cell is in the results or not); write through a PATCH and, once the cell is
archived, through DELETE (an archived cell, so that the answer is about access alone). A vector that
refuses writes tries a harmless content PATCH and its creator archives the cell; a vector that allows
writes has its caller's PATCH archive the cell (the archive the DELETE probe needs, one request fewer),
and the creator archives only when that PATCH did not. A vector that only varies a matching rule
(AMP-ACL-04/-06, no write requirement cited, the write refused) writes through PATCH alone, or not at all
when neither its policy's writable_by nor its read grant is in question (``write_surfaces``): the default
refusal of a stranger on both write surfaces is default-policy-refuses-a-stranger's question. Vectors with
the same caller and owner share one owner, one list and one search (``amp.shared``): whichever of them
runs first creates every cell of the group and reads the caller's pages once (and the creator's search
only when the caller's list shows a cell its search misses); each check then probes only its own cell and
shows the pages as its evidence (one group per chunk of at most GROUP_SIZE: see ``GroupKey``). A vector
refused everything whose cell would be another's, allowed everything (the same owner and policy: the
owner bypass asked of another agent and of the owner, ``RIDERS``), joins that vector's group and is asked
on its cell: one sequence, the refused caller's requests before the allowed one's writes. A vector
whose whole question is the stranger's of the refusal checks (agent "b", a fresh owner, the default
policy, everything refused: ``answered_by_refusals``) makes no cell: it judges the replies of the shared
stranger-refusals cell, which default-policy-refuses-a-stranger's group makes first of its cells (its
list and search of the owner are the group's): once the pages are read, its stranger reads, writes and,
once the cell is archived, deletes it (``_refusal_sequence``). The creator's vectors are made in that group
too (``HOMES``: the creator lists and searches its owner), and creator-with-the-default-policy, whose
question is that cell's creator's, judges the creator's read, archive and DELETE in that sequence
(``answered_as_creator``). The vectors of a group whose caller is refused everything, and whose write,
if asked at all, is a PATCH (``poolable``), are asked first on one pooled cell holding all their patterns
(group testing, ``_pool``): any entry that matches grants, so when every surface refuses the caller
there, each vector's own patterns refuse it and each judges the pooled cell's replies; when anything
there is not a plain refusal, each gets the cell of its own it had before, and the caller's pages again,
so a wrong decision is always found on the vector's own policy and judged with its own stance
(``_pool_sequence``). All surfaces must give the caller the same
answer (AMP-SRCH-15, AMP-ACL-14, AMP-LIST-07: a disagreement always fails); when they agree with each
other but not with the vector, the decision's stance (requirements.md §2) makes it a fail or a warn.

Patterns are built from the run's real agent ids: keyless ids derive from the run, and with API keys the
patterns derive from the keyed agents' ids. A vector whose pattern cannot be expressed with the ids at hand
(too short, no letter to flip, the pattern does not separate the spec's rule from the wrong one it guards
against) skips with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from amp_conformance import SHOULD, Amp01Context, check
from amp_conformance.amp01.checks._support import expect_refusal, expect_step, shown
from amp_conformance.amp01.checks.access.groups import (
    REFUSALS_VECTOR,
    GroupKey,
    _archived,
    _refusals,
    _refusals_as_vector,
    _thawed,
    adopted_steps,
    decision,
    group_key,
    group_of,
    group_steps,
    holds_refusals,
    listed,
    seen_in,
    spent_pooled_cell,
)
from amp_conformance.amp01.checks.access.steps import POLICY_CELL
from amp_conformance.amp01.checks.access.vectors import (
    SURFACE_IDS,
    VECTORS,
    WRITE_SURFACES,
    caller_role,
    write_surfaces,
)
from amp_conformance.engine.client import Reply
from amp_conformance.engine.outcomes import CheckFailure
from amp_conformance.engine.steps import Made


def _marks(vector: Mapping[str, Any]) -> Any:
    """The vector's own @check mark (pytest.param takes the MarkDecorator that check() returns)."""
    ids = list(dict.fromkeys([*vector["requirements"], *SURFACE_IDS]))
    return check(*ids, uses=group_steps(vector), adopts=adopted_steps(vector))


def _describe(observed: Mapping[str, tuple[bool, Reply]]) -> str:
    return ", ".join(f"{surface} {'allowed' if ok else 'refused'}" for surface, (ok, _) in observed.items())


def _disagreement(action: str, observed: Mapping[str, tuple[bool, Reply]]) -> tuple[str, Reply, str] | None:
    """A message, the odd reply and the requirement broken, when the surfaces of one action disagree."""
    values = {ok for ok, _ in observed.values()}
    if len(values) < 2:
        return None
    if action == "read":
        reference = observed["GET"][0]
        odd = [surface for surface, (ok, _) in observed.items() if ok != reference]
        rules = []
        if "search" in odd:
            rules.append(("AMP-SRCH-15", "search does not apply the read rule GET applies"))
        if "list" in odd:
            rules.append(("AMP-ACL-14", "list does not apply the read rule GET applies (AMP-LIST-07)"))
        reply = observed[odd[0]][1]
    else:
        rules = [("AMP-ACL-02", "PATCH and DELETE, both writes, get different decisions")]
        reply = observed["DELETE"][1]
    message = f"the surfaces disagree on {action} ({_describe(observed)}): " + "; ".join(t for _, t in rules)
    return message, reply, rules[0][0]


@dataclass
class Asked:
    """Where one vector's replies come from, decided once (:func:`asked_of`), so that one judgement
    (:func:`judge`) follows whatever the source: the cell (its entry: cell, where its create sits,
    rendered policy, owner and type), the caller's pages, where replies sit in this check's evidence,
    the replies a shared sequence sent for it (then the check sends none) and a step of that sequence
    that broke, raised where the vector's own step would have been."""

    creator: str
    caller: str
    entry: Mapping[str, Any]
    pages: Mapping[str, Any]
    reply_at: Callable[[int], Reply]
    sent: dict[str, Reply] = field(default_factory=dict)
    deferred: CheckFailure | None = None


def asked_of(
    amp: Amp01Context, vector: Mapping[str, Any], key: GroupKey, group: Made[dict[str, Any], Reply]
) -> Asked:
    """The source of ``vector``'s replies in its group: its own cell (and the group's pages, a rider's
    caller's, or its own after a fallback), the stranger-refusals cell as its creator's
    (:func:`~.groups.answered_as_creator`) or its stranger's (:func:`~.groups.answered_by_refusals`),
    the group's pooled cell (:func:`~.groups._pool`), or the rider and host sequence on the host's cell
    (:func:`~.groups._joint_sequence`). A vector the group could not make skips or fails here."""
    made_group, reply_at = group.value, group.reply_at
    made = made_group["vectors"][vector["name"]]
    if "skip" in made:
        amp.skip(made["skip"])
    if "failure" in made:
        raise _thawed(made["failure"], reply_at)
    role = caller_role(amp, vector)
    creator = amp.agent_id("a")
    caller = amp.agent_id(role)
    # the caller's pages: the group's, a rider's caller's (RIDERS), or a host's own (its fallback cell)
    pages = made.get("pages") or (made_group if role == key[0] else made_group["riders"][role])
    asked = Asked(creator, caller, made, pages, reply_at)
    if made.get("refusals") == "creator":  # the refusals cell's creator (answered_as_creator)
        refusals = made_group["refusals"]
        asked.entry = {
            **made,
            "cell": refusals["cell"],
            "create": refusals["at"]["create"],
            "owner_id": refusals["owner"],
        }
        asked.pages = made_group["riders"]["a"]
        asked.sent = {
            s: reply_at(refusals["at"][f"creator {s}"])
            for s in ("GET", "PATCH", "DELETE")
            if f"creator {s}" in refusals["at"]
        }
        if "failure" in refusals:  # raised where the creator's own archive would have raised it
            asked.deferred = _thawed(refusals["failure"], reply_at)
    elif made.get("refusals"):
        held = (made_group, reply_at) if holds_refusals(amp, key) else None
        asked.entry, asked.pages, asked.reply_at, asked.sent = _refusals_as_vector(amp, made, held)
    elif "pool" in made:  # the group's pooled cell refused the caller everything (_pool)
        surfaces = ("GET", *write_surfaces(vector))
        asked.sent = {surface: reply_at(at) for surface, at in made["pool"].items() if surface in surfaces}
        others = ", ".join(name for name in made["members"] if name != vector["name"])
        amp.note(
            f"asked on one cell pooling this vector's policy with the policies of {others}, each refusing "
            "this caller everything: every surface refused it there, so each pattern refuses it (any "
            "entry that matched would grant); had any not refused it, each vector would have been asked "
            "on a cell of its own"
        )
    entry = asked.entry
    joint = made_group["joints"].get(entry.get("joint") or ("" if "pages" in entry else vector["name"]))
    if joint is not None:  # a rider and its host: the sequence asked on the host's cell for both
        if "failure" in joint:
            raise _thawed(joint["failure"], reply_at)
        side = "host" if vector["name"] in made_group["joints"] else "rider"
        asked.sent = {s: reply_at(joint["at"][f"{side} {s}"]) for s in ("GET", "PATCH", "DELETE")}
    return asked


#: The vectors of the smoke tier: one per access rule where one probe tells (owner, creator, exact
#: pattern, wildcard anchoring, public read), the ACL-09/-10/-14 refusals and list and search filtering.
SMOKE_VECTORS = frozenset(
    {
        "owner-bypass-is-for-the-owner-only",
        "exact-pattern-shorter-than-the-id",
        "star-pattern-refuses-a-longer-literal",
        "creator-with-the-default-policy",
        "public-reads-but-never-writes",
    }
)


def _tiers(vector: Mapping[str, Any]) -> list[Any]:
    return [pytest.mark.smoke] if vector["name"] in SMOKE_VECTORS else []


@pytest.mark.parametrize(
    "vector", [pytest.param(v, id=v["name"], marks=[_marks(v), *_tiers(v)]) for v in VECTORS]
)
def test_access_matrix(amp: Amp01Context, vector: dict[str, Any]) -> None:
    """Access matrix: the caller gets the vector's decision on GET, search, list, PATCH and DELETE alike."""
    key = group_key(amp, vector)
    group = group_of(amp, key)
    judge(amp, vector, asked_of(amp, vector, key, group), group.value["text"])


def judge(amp: Amp01Context, vector: Mapping[str, Any], asked: Asked, text: str) -> None:
    """The one judgement of a vector, wherever its replies came from (:class:`Asked`): the created
    cell as a step, then each surface's decision (what a shared sequence sent, else asked here), the
    surfaces compared with each other, then with the vector (its stance: a fail or a warn)."""
    role, creator, caller = caller_role(amp, vector), asked.creator, asked.caller
    made, pages, replies_at, sent, deferred = (
        asked.entry,
        asked.pages,
        asked.reply_at,
        asked.sent,
        asked.deferred,
    )
    live: dict[str, Any] = made["cell"]
    policy, owner_id, owner_type = made["policy"], made["owner_id"], made["owner_type"]
    created = replies_at(made["create"])
    stored = live.get("access_policy")
    expect_step(
        amp,
        isinstance(stored, dict) and {k: stored.get(k) for k in policy} == policy,
        f"the created cell's access policy is {shown(stored)}, not the one sent, {shown(policy)}",
        created,
        step="creating a cell with the vector's access policy",
        requirement="AMP-CRE-06",
    )
    made_by = (live.get("identity") or {}).get("created_by")
    expect_step(
        amp,
        made_by == creator,
        f"the created cell's created_by is {shown(made_by)}, not the creating agent {shown(creator)}",
        created,
        step="creating a cell with the vector's access policy",
        requirement="AMP-CRE-07",
    )

    client = amp.as_agent(role)
    who = f"agent {shown(caller)}"
    path = f"/memories/{live['id']}"
    reads: dict[str, tuple[bool, Reply]] = {}
    reply = sent["GET"] if sent else client.get(path)
    reads["GET"] = (decision(amp, reply, (200,), f"GET by {who}"), reply)
    reads["search"] = seen_in(pages["search"], live["id"], replies_at)
    reads["list"] = seen_in(pages["list"], live["id"], replies_at)
    if reads["GET"][0] and reads["list"][0] and not reads["search"][0]:
        by_creator, creator_reply = seen_in(pages["creator_search"], live["id"], replies_at)
        expect_step(
            amp,
            by_creator,
            f"results missing: neither the caller's search nor its creator's returns cell {live['id']}, "
            "which GET and list show the caller (a search that does not return every match, not an "
            "access decision)",
            creator_reply,
            step="a search returning every matching cell the caller may read",
            requirement="AMP-SRCH-01",
        )
    writes: dict[str, tuple[bool, Reply]] = {}
    may_write = bool(vector["expect"]["write"]["allowed"])
    archived = False
    surfaces = write_surfaces(vector)
    if len(surfaces) < len(WRITE_SURFACES):
        amp.note(
            f"write asked through {', '.join(surfaces) or 'no surface'}: the vector asks a matching rule, "
            "not the write decision (PATCH and DELETE agreeing is asked by the vectors citing AMP-ACL-02)"
        )
    if sent:  # a shared sequence's PATCH and DELETE (of the archived cell), or the pooled cell's PATCH
        if "PATCH" in sent:
            if deferred is not None and sent["PATCH"].status not in (200, 403):
                raise deferred  # neither allowed nor refused: the archive step first, as below
            writes["PATCH"] = (decision(amp, sent["PATCH"], (200,), f"PATCH by {who}"), sent["PATCH"])
        if deferred is not None:
            raise deferred
        if "DELETE" in sent:
            reply = sent["DELETE"]
            writes["DELETE"] = (
                decision(amp, reply, (200, 204), f"DELETE of the archived cell by {who}"),
                reply,
            )
        surfaces = ()
    elif surfaces and may_write:  # the allowed write is the archive the DELETE probe needs
        reply = client.patch(path, {"lifecycle": {"status": "archived"}})
        if reply.status not in (200, 403):
            # neither allowed nor refused: whether the server takes the status-only archive at all
            # (AMP-PATCH-10) is asked of the creator first; if it refuses the creator too, that step is
            # the root cause and this vector is blocked under it, as every vector whose creator
            # archives is (one cascade, one outcome)
            amp.archive(live["id"])
            archived = True
    elif surfaces:
        reply = client.patch(path, {"content": {"text": text, "metadata": {"acl_probe": vector["name"]}}})
    if surfaces:
        writes["PATCH"] = (decision(amp, reply, (200,), f"PATCH by {who}"), reply)
    if "DELETE" in surfaces:
        # DELETE is tried on the archived cell, so that its answer is about access alone (not AMP-DEL-03)
        if not archived and not (may_write and reply.status == 200 and _archived(reply)):
            amp.archive(live["id"])
        reply = client.delete(path)
        writes["DELETE"] = (decision(amp, reply, (200, 204), f"DELETE of the archived cell by {who}"), reply)

    context = (
        f"vector {vector['name']}: {vector['description']} Caller {shown(caller)}, policy {shown(policy)}, "
        f"owner {shown(owner_id)} ({owner_type}), creator {shown(creator)}"
    )
    failures: list[tuple[str, Reply, str]] = []
    for action, observed in (("read", reads), ("write", writes)):
        if not observed:
            continue
        split = _disagreement(action, observed)
        if split:
            failures.append(split)
            continue
        expected = vector["expect"][action]
        got, reply = next(iter(observed.values()))
        if got == expected["allowed"]:
            continue
        rule = _broken_rule(expected, caller, owner_id, creator)
        verb = "allowed" if expected["allowed"] else "refused"
        message = (
            f"every surface {'allowed' if got else 'refused'} the {action} by {who} "
            f"({', '.join(observed)}); {rule} has it {verb}"
        )
        if expected["stance"] == "warn":
            amp.warn(
                f"{message} (requirements.md makes this a warning) [{context}]", reply, requirements=(rule,)
            )
        else:
            failures.append((message, reply, rule))
    if failures:
        message = "; ".join(message for message, _, _ in failures) + f" [{context}]"
        amp.fail(message, failures[0][1], requirement=failures[0][2])


def _broken_rule(expected: Mapping[str, Any], caller: str, owner_id: str, creator: str) -> str:
    """The requirement a wrong decision breaks: the vector's, except that a refused owner or creator
    breaks the owner (AMP-ACL-07) or creator (AMP-ACL-08) bypass, whatever policy the vector tries."""
    if expected["allowed"] and caller == owner_id:
        return "AMP-ACL-07"
    if expected["allowed"] and caller == creator:
        return "AMP-ACL-08"
    return str(expected["requirement"])


#: The refusal checks' work unit in a parallel run: default-policy-refuses-a-stranger's, whose group
#: makes the cell they judge, so that one worker makes it once for all of them.
REFUSALS_STEPS = group_steps(REFUSALS_VECTOR)


@check("AMP-ACL-10", "AMP-ACL-09", uses=REFUSALS_STEPS)
def test_refusals_are_403_with_one_documented_code(amp: Amp01Context) -> None:
    """A refused GET, PATCH and DELETE are each 403 with FORBIDDEN or ACCESS_DENIED, the same code (C-02)."""
    _, made, reply_at = _refusals(amp)
    replies = {name: reply_at(made["at"][name]) for name in ("GET", "PATCH", "DELETE")}
    codes: dict[str, str] = {}
    for name, reply in replies.items():
        what = f"a stranger's {name} under the default policy"
        if reply.status == 404:
            amp.fail(f"{what}: 404 for an existing cell; C-02 requires 403", reply, expected="403")
        expect_refusal(amp, reply, what)
        codes[name] = reply.json_object()["error"]["code"]
    amp.expect(
        len(set(codes.values())) == 1,
        "the refusal code differs between routes: "
        + ", ".join(f"{route} {code}" for route, code in codes.items()),
        replies["DELETE"],
    )
    source = "the API reference tables" if codes["GET"] == "FORBIDDEN" else "the upstream contract"
    amp.note(f"refusal code {codes['GET']} ({source}, C-02)")


@check(
    "AMP-ACL-11",
    level=SHOULD,
    stance="C-01: the API reference documents 404 for unknown ids",
    uses=REFUSALS_STEPS,
)
def test_refusal_does_not_reveal_whether_the_cell_exists(amp: Amp01Context) -> None:
    """A stranger gets the same status, code and message for a forbidden, an unknown and a deleted id."""
    _, made, reply_at = _refusals(amp)
    if made["deletion"] is not None:
        raise _thawed(made["deletion"], reply_at)
    replies = {
        name: reply_at(made["at"][key])
        for name, key in (("forbidden", "GET"), ("unknown", "unknown"), ("deleted", "deleted"))
    }

    def answer(reply: Reply) -> tuple[int, Any, Any]:
        try:
            error = reply.json_object().get("error")
        except AssertionError:
            error = None
        error = error if isinstance(error, dict) else {}
        return reply.status, error.get("code"), error.get("message")

    answers = {name: answer(reply) for name, reply in replies.items()}
    distinct = {value for value in answers.values()}
    seen = "; ".join(
        f"{name}: {status} {code} {shown(message)}" for name, (status, code, message) in answers.items()
    )
    amp.expect(
        len(distinct) == 1,
        f"forbidden, unknown and deleted ids look different to a stranger (an existence oracle, RFC §5): "
        f"{seen}",
        replies["unknown"],
    )


@pytest.mark.smoke
@check("AMP-ACL-12", "AMP-ACL-14", uses=(POLICY_CELL,))
def test_policy_changes_take_effect_at_once(amp: Amp01Context) -> None:
    """After the owner names agent b in readable_by, b reads and lists the cell; after removal it cannot."""
    made = POLICY_CELL(amp).value
    cell, owner = made["cell"], made["owner"]
    reader = amp.agent_id("b")
    path = f"/memories/{cell['id']}"
    b = amp.as_agent("b")
    a = amp.as_agent("a")
    amp.expect(
        not decision(amp, b.get(path), (200,), "b's GET before it is named"),
        "b reads the cell before the policy names it",
        requirement="AMP-ACL-12",
    )

    reply = a.patch(path, {"access_policy": {"readable_by": [reader]}})
    amp.expect_status(reply, 200, what="the creator naming b in readable_by")
    reply = b.get(path)
    amp.expect(
        decision(amp, reply, (200,), "b's GET once named"),
        "b is refused right after the policy names it",
        reply,
        requirement="AMP-ACL-12",
    )
    found, reply = listed(amp, "b", owner, cell["id"])
    amp.expect(found, "the cell is missing from b's list right after the policy names b", reply)

    reply = a.patch(path, {"access_policy": {"readable_by": []}})
    amp.expect_status(reply, 200, what="the creator removing b from readable_by")
    reply = b.get(path)
    amp.expect(
        not decision(amp, reply, (200,), "b's GET after removal"),
        "b still reads the cell right after its removal from the policy",
        reply,
        requirement="AMP-ACL-12",
    )
    found, reply = listed(amp, "b", owner, cell["id"])
    # a list showing what GET refuses breaks the list's read rule (AMP-ACL-14), not the policy's timing
    amp.expect(
        not found,
        "the cell is still in b's list, though b's GET is refused",
        reply,
        requirement="AMP-ACL-14",
    )


@check("AMP-ACL-13", uses=REFUSALS_STEPS)
def test_nothing_in_the_body_raises_a_callers_rights(amp: Amp01Context) -> None:
    """A stranger naming itself created_by (or in the policy) in a PATCH body is refused and gains nothing."""
    creator, stranger_id = amp.agent_id("a"), amp.agent_id("b")
    # a cell of "a" on which "b" holds no right: the pooled cell the matrix made and is done with
    # (spent_pooled_cell), else one of its own
    cell = spent_pooled_cell(amp)
    if cell is None:
        cell = amp.create_cell()
    else:
        amp.note(f"asked on the access matrix's pooled cell {cell['id']}, on which b was refused everything")
    path = f"/memories/{cell['id']}"
    stranger = amp.as_agent("b")
    claims = (
        ("identity.created_by", {"identity": {"created_by": stranger_id}, "content": {"text": "mine now"}}),
        ("identity.owner_id", {"identity": {"owner_id": stranger_id}, "content": {"text": "mine now"}}),
        ("access_policy", {"access_policy": {"readable_by": [stranger_id], "writable_by": [stranger_id]}}),
    )
    for label, patch in claims:
        # a PATCH the server must refuse may be sent again after a lost answer: one it applied shows
        # in its answer or in the reads after it, whichever attempt applied it
        reply = stranger.patch(path, patch, repeatable=True)
        amp.expect(
            not decision(amp, reply, (200,), f"a stranger's PATCH claiming {label}"),
            f"a stranger's PATCH setting {label} to itself is refused",
            reply,
        )
    # one read after the three claims: each only adds to the stranger's claims (a right one of them
    # gave is never taken back by a later one), so a read refused after all three was refused after
    # each; a right gained is seen here (or, as write access, in the next claim's PATCH)
    reply = stranger.get(path)
    labels = ", ".join(label for label, _ in claims)
    amp.expect(
        not decision(amp, reply, (200,), f"the stranger's GET after claiming {labels}"),
        f"after claiming {labels} in a body the stranger still cannot read the cell",
        reply,
    )
    owner = amp.as_agent("a")
    reply = owner.patch(path, {"identity": {"created_by": stranger_id}, "content": {"text": "edited"}})
    amp.expect_status(reply, 200, 422, what="the creator's PATCH sending identity.created_by")
    if reply.status == 422:
        amp.note("the server refuses identity members in a PATCH body with 422 rather than ignoring them")
    reply = owner.get(path)
    amp.expect_status(reply, 200, what="the creator reading the cell back")
    got = (reply.json_object().get("identity") or {}).get("created_by")
    amp.expect(got == creator, f"identity.created_by stays {shown(creator)} (got {shown(got)})", reply)
    reply = stranger.get(path)
    amp.expect(
        not decision(amp, reply, (200,), "the stranger's GET after the creator's PATCH"),
        "the stranger still cannot read the cell",
        reply,
    )
