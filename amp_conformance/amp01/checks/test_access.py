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

import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import pytest
from ulid import ULID

from amp_conformance import SHOULD, Amp, check, load_fixture
from amp_conformance.amp01.checks._support import about, expect_refusal, expect_step, shown
from amp_conformance.amp01.checks.access.steps import POLICY_CELL
from amp_conformance.engine.client import Reply
from amp_conformance.engine.outcomes import CheckFailure, PreconditionFailed
from amp_conformance.engine.steps import Frozen, Made, Recorder, Step

MATRIX: dict[str, Any] = load_fixture("access", "matrix.json")
VECTORS: list[dict[str, Any]] = MATRIX["vectors"]

#: Every matrix vector is checked through search and list too, so it cites their read-rule ids.
SURFACE_IDS = ("AMP-SRCH-15", "AMP-ACL-14", "AMP-LIST-07")
READ_SURFACES = ("GET", "search", "list")
WRITE_SURFACES = ("PATCH", "DELETE")
#: Wrong matching rules a vector may guard against (its "decoy").
DECOYS = ("substring", "prefix", "case-insensitive")
MAX_PAGES = 20
DEFAULT_PAGE = 100


# --------------------------------------------------------------------------------------- helpers


def page_size(amp: Amp) -> int:
    """The advertised max_page_size, or DEFAULT_PAGE when /spec cannot say (other checks report that)."""
    value = amp.capabilities.get("max_page_size")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else DEFAULT_PAGE


def find_in_pages(amp: Amp, fetch: Callable[[int], Reply], cell_id: str, what: str) -> tuple[bool, Reply]:
    """Page through ``fetch(offset)`` until ``cell_id`` shows up or the pages end."""
    offset = 0
    reply = fetch(offset)
    for _ in range(MAX_PAGES):
        amp.expect_status(reply, 200, what=what)
        body = reply.json_object()
        results = body.get("results")
        if not isinstance(results, list):
            amp.fail(f"{what}: 'results' is an array (got {type(results).__name__})", reply)
        if any(isinstance(item, dict) and item.get("id") == cell_id for item in results):
            return True, reply
        if body.get("has_more") is not True or not results:
            return False, reply
        offset += len(results)
        reply = fetch(offset)
    return False, reply


def listed(amp: Amp, role: str, owner_id: str, cell_id: str) -> tuple[bool, Reply]:
    client = amp.as_agent(role)
    limit = page_size(amp)
    return find_in_pages(
        amp,
        lambda offset: client.get(
            "/memories", params={"owner_id": owner_id, "limit": limit, "offset": offset}
        ),
        cell_id,
        "listing the owner's cells",
    )


def decision(amp: Amp, reply: Reply, allowed: tuple[int, ...], what: str) -> bool:
    """True for an allowed answer, False for a refusal (403 in the server's convention); else fail."""
    if reply.status in allowed:
        return True
    if reply.status == 403:
        with about("AMP-ACL-10"):  # the refusal's shape: 403 with the server's refusal code
            expect_refusal(amp, reply, what)
        return False
    wanted = " or ".join(str(s) for s in allowed)
    hint = (
        " (C-02: an existing cell the caller may not use is a 403, never a 404)"
        if reply.status == 404
        else ""
    )
    amp.fail(
        f"{what} answered {reply.status}, neither {wanted} (allowed) nor 403 (refused){hint}",
        reply,
        expected=f"{wanted} or 403",
        requirement="AMP-ACL-10",
    )


# --------------------------------------------------------------------- templates and local model

_PLACEHOLDER = re.compile(
    r"\{(?P<who>[a-z][a-z0-9_-]*)(?:\[(?P<index>-?\d*(?::-?\d*)?)\])?(?:\|(?P<filter>other|flipcase))?\}"
)


class Unexpressible(ValueError):
    """A vector's template cannot be built from the agent ids at hand."""


def template_roles(value: Any) -> set[str]:
    """Roles named by placeholders anywhere in ``value`` (``caller`` excluded)."""
    if isinstance(value, str):
        return {m["who"] for m in _PLACEHOLDER.finditer(value)} - {"caller"}
    if isinstance(value, Mapping):
        return set().union(*(template_roles(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(template_roles(v) for v in value)) if value else set()
    return set()


def _select(value: str, index: str) -> str:
    if ":" in index:
        start, stop = (int(part) if part else None for part in index.split(":"))
        return value[start:stop]
    try:
        return value[int(index)]
    except (IndexError, ValueError):
        raise Unexpressible(f"{shown(value)} has no character [{index}]") from None


def _flip_case(value: str) -> str:
    for position, char in enumerate(value):
        if char.lower() != char.upper():
            return value[:position] + char.swapcase() + value[position + 1 :]
    raise Unexpressible(f"{shown(value)} has no letter whose case could be flipped")


def render(template: str, ids: Mapping[str, str]) -> str:
    """Fill a vector's placeholders (see ``templates`` in matrix.json) from ``ids``."""

    def replace(match: re.Match[str]) -> str:
        value = ids[match["who"]]
        if match["index"] is not None:
            value = _select(value, match["index"])
        if match["filter"] == "other":
            return next(c for c in "-x0" if not value.endswith(c))
        if match["filter"] == "flipcase":
            return _flip_case(value)
        return value

    return _PLACEHOLDER.sub(replace, template)


def pattern_matches(pattern: str, agent: str, rule: str = "spec") -> bool:
    """The spec's matching (``*`` is any run, whole id, case-sensitive), or one of the DECOYS."""
    if rule == "case-insensitive":
        pattern, agent = pattern.lower(), agent.lower()
    elif rule == "substring":
        pattern = f"*{pattern}*"
    elif rule == "prefix" and not pattern.endswith("*"):
        pattern += "*"
    regex = "".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern))
    return re.fullmatch(regex, agent, re.DOTALL) is not None


def expected_decision(
    policy: Mapping[str, Any], owner_id: str, creator: str, caller: str, action: str, rule: str = "spec"
) -> bool:
    """What the spec (or a decoy rule) decides for ``caller`` (requirements.md AMP-ACL-01/02/07/08)."""
    if caller in (owner_id, creator):
        return True
    if action == "read" and policy.get("public") is True:
        return True
    patterns = policy.get("readable_by" if action == "read" else "writable_by") or []
    return any(pattern_matches(p, caller, rule) for p in patterns)


def render_vector(vector: Mapping[str, Any], ids: Mapping[str, str]) -> tuple[dict[str, Any], str, str]:
    """(policy, owner_id, owner_type) of ``vector`` for these ids; raises Unexpressible."""
    raw = vector.get("policy", {})
    policy = {
        "public": bool(raw.get("public", False)),
        "readable_by": [render(p, ids) for p in raw.get("readable_by", [])],
        "writable_by": [render(p, ids) for p in raw.get("writable_by", [])],
    }
    owner = vector.get("owner") or {}
    owner_id = render(owner["id"], ids) if "id" in owner else ids["owner"]
    return policy, owner_id, owner.get("type", "user")


def expressible(
    vector: Mapping[str, Any], policy: Mapping[str, Any], owner_id: str, creator: str, caller: str
) -> str | None:
    """Why the rendered vector does not test what it means to with these ids, or None."""
    where = f"caller {shown(caller)}, policy {shown(dict(policy))}"
    for action in ("read", "write"):
        wanted = vector["expect"][action]["allowed"]
        if expected_decision(policy, owner_id, creator, caller, action) != wanted:
            return f"with these agent ids the pattern does not express the vector ({where})"
    decoy = vector.get("decoy")
    if decoy and all(
        expected_decision(policy, owner_id, creator, caller, action, decoy)
        == vector["expect"][action]["allowed"]
        for action in ("read", "write")
    ):
        return f"with these agent ids the pattern does not tell {decoy} matching from the spec's ({where})"
    return None


def caller_role(amp: Amp, vector: Mapping[str, Any]) -> str:
    if amp.keys_mode:
        return str(vector["caller"])
    return str(vector.get("keyless_caller", vector["caller"]))


# ----------------------------------------------------------------- the matrix's shared cells and pages

#: Where a vector's cell is listed and searched: the role calling, the owner template and the chunk.
#: Vectors with the same key share one owner, one list and one search (made once, by whichever of them
#: runs first). Chunks of at most GROUP_SIZE vectors keep each group's chain of requests short, and
#: each group is one work unit of a parallel run (``scope=``), so it is made once there too; each chunk
#: costs one list and one search, so the chunks are no smaller than a unit of a few seconds needs
#: (agent "b" calling for fresh owners: 27 vectors, two chunks; it was four of 8). Serial and
#: parallel runs group alike: a run is the same run however many workers it has (the same cells, so
#: the same outcomes, also under a fault that depends on how many cells a page holds).
GroupKey = tuple[str, str, int]
GROUP_SIZE = 14


def _chunks() -> dict[str, int]:
    seen: dict[tuple[str, str], int] = {}
    chunk: dict[str, int] = {}
    for vector in VECTORS:
        where = (str(vector["caller"]), str((vector.get("owner") or {}).get("id", "")))
        chunk[vector["name"]] = seen.get(where, 0) // GROUP_SIZE
        seen[where] = seen.get(where, 0) + 1
    return chunk


_CHUNK = _chunks()

#: Vectors asked on another vector's cell, rider -> host: the same owner (template rendered alike),
#: owner type and policy; the rider's caller is refused everything and the host's allowed everything,
#: each on every surface. The rider joins the host's group (its caller lists and searches the group's
#: owner there too) and, once the pages are read, one sequence asks both on the host's cell
#: (:func:`_joint_sequence`): one cell instead of two. With other ids (the cells would differ), the
#: rider makes a cell of its own in that group.
RIDERS: dict[str, str] = {"owner-bypass-is-for-the-owner-only": "owner-of-type-agent-with-the-default-policy"}
#: Vectors made in another vector's group (guest -> home): the riders, and the creator's vectors, which
#: join the group holding the stranger-refusals cell (a fresh owner's, as theirs), whose default policy
#: is also creator-with-the-default-policy's question (:func:`answered_as_creator`); the creator lists
#: and searches that owner there instead of one of its own.
HOMES: dict[str, str] = {
    **RIDERS,
    "creator-bypasses-a-policy-naming-others": "default-policy-refuses-a-stranger",
    "creator-with-the-default-policy": "default-policy-refuses-a-stranger",
}
_BY_NAME: dict[str, dict[str, Any]] = {vector["name"]: vector for vector in VECTORS}
_ORDER = [vector["name"] for vector in VECTORS]
if any(_ORDER.index(host) > _ORDER.index(rider) for rider, host in RIDERS.items()):
    raise ValueError("a host precedes its rider in matrix.json: its group makes the host's cell first")


def _home(vector: Mapping[str, Any]) -> Mapping[str, Any]:
    """The vector whose group ``vector`` belongs to: its home, for a guest (:data:`HOMES`), else itself."""
    host = HOMES.get(str(vector["name"]))
    return _BY_NAME[host] if host is not None else vector


def group_key(amp: Amp, vector: Mapping[str, Any]) -> GroupKey:
    """The group a vector's cell is made in: its home's caller role, owner template and chunk."""
    home = _home(vector)
    owner = str((home.get("owner") or {}).get("id", ""))
    return caller_role(amp, home), owner, _CHUNK[home["name"]]


def _group_name(key: GroupKey) -> str:
    role, owner, chunk = key
    return f"acl:matrix:{role}:{owner or 'a fresh owner'}:{chunk}"


def _thawed(frozen: Frozen, reply_at: Callable[[int], Reply]) -> CheckFailure:
    """A finding a group kept (``Recorder.failure``), raised again in the check it is about, with the
    same exchange."""
    return frozen.failure(reply_at(frozen.at).exchange if frozen.at is not None else None)


def all_pages(amp: Amp, rec: Recorder, fetch: Callable[[int], Reply], what: str) -> dict[str, Any]:
    """Every page of ``fetch(offset)``: ``pages`` as [offset of the exchange, ids on the page], and the
    ``failure`` (frozen) that stopped the paging, if any."""
    pages: list[list[Any]] = []
    offset = 0
    try:
        for _ in range(MAX_PAGES):
            reply = fetch(offset)
            amp.expect_status(reply, 200, what=what)
            body = reply.json_object()
            results = body.get("results")
            if not isinstance(results, list):
                amp.fail(f"{what}: 'results' is an array (got {type(results).__name__})", reply)
            ids = [item.get("id") for item in results if isinstance(item, dict)]
            pages.append([rec.position(reply), ids])
            if body.get("has_more") is not True or not results:
                break
            offset += len(results)
    except CheckFailure as failure:
        return {"pages": pages, "failure": rec.failure(failure)}
    return {"pages": pages, "failure": None}


def make_group(amp: Amp, rec: Recorder, key: GroupKey) -> dict[str, Any]:
    """One cell per vector of the group, created by agent "a" with the vector's owner and policy, then
    the caller's list and search of the group's owner (and each guest's caller's, :data:`HOMES`). Per
    vector: the cell and where its create is, or why it skips, or the failure that stopped its create
    (raised by that vector's check only); a rider shares its host's cell, asked once the pages are
    read (:func:`_joint_sequence`). The group of default-policy-refuses-a-stranger
    (:func:`holds_refusals`) also makes the stranger-refusals cell, first of its cells, and once the
    pages are read asks that cell's sequence (:func:`_refusal_sequence`), with the creator's requests
    when creator-with-the-default-policy is its creator's question (:func:`answered_as_creator`). The
    group's :func:`poolable` vectors get one pooled cell instead of a cell each (:func:`_pool`), asked
    once the pages are read (:func:`_pool_sequence`); when it refused the caller everything, the group's
    ``pool`` is that cell (:func:`spent_pooled_cell`)."""
    role = key[0]
    members = [vector for vector in VECTORS if group_key(amp, vector) == key]
    creator = amp.agent_id("a")
    callers: dict[str, str] = {}
    missing: dict[str, str] = {}
    for vector in members:  # the group's caller, then each guest's (too few keys: its vectors skip)
        for other in dict.fromkeys((role, caller_role(amp, vector))):
            if other not in callers and other not in missing:
                try:
                    callers[other] = amp.agent_id(other)
                except pytest.skip.Exception as exc:
                    missing[other] = str(exc.msg or exc)
    fresh_owner = amp.owner()
    roles: dict[str, str] = {}
    needed = {
        vector["name"]: template_roles({"policy": vector.get("policy", {}), "owner": vector.get("owner", {})})
        for vector in members
    }
    for name in sorted(set().union(*needed.values()) - set(callers)):
        try:
            roles[name] = amp.agent_id(name)
        except pytest.skip.Exception as exc:  # too few keys for this role: its vectors skip, not the rest
            missing[name] = str(exc.msg or exc)
    roles |= callers
    text = f"access matrix probe {str(ULID()).lower()}"
    vectors: dict[str, dict[str, Any]] = {}
    owners: set[str] = set()
    refusals: dict[str, Any] | None = None
    joints: list[tuple[str, str]] = []
    creating: dict[str, dict[str, Any]] = {}
    """The vectors whose cells are created together, by name: their rendered policy, owner and type."""
    riding: dict[str, dict[str, Any]] = {}
    """Riders (:data:`RIDERS`) whose host is among ``creating``: its cell serves them when it was made."""
    if holds_refusals(amp, key) and role in callers:
        # first of the group's cells, the oldest of its text: the group's other cells are found (or
        # lost by an index losing duplicates of a text past a few) as they would be without it
        refusals = _make_refusals_cell(amp, rec, text, fresh_owner)
        if "cell" in refusals:
            owners.add(fresh_owner)
    for vector in members:
        name, vector_role = vector["name"], caller_role(amp, vector)
        lacking = sorted((needed[name] | {vector_role}) & set(missing))
        if lacking:
            vectors[name] = {"skip": missing[lacking[0]]}
            continue
        caller = callers[vector_role]
        ids = {"caller": caller, "owner": fresh_owner, **{n: roles[n] for n in needed[name]}}
        try:
            policy, owner_id, owner_type = render_vector(vector, ids)
        except Unexpressible as exc:
            vectors[name] = {"skip": f"cannot be expressed with the run's agent ids: {exc}"}
            continue
        reason = expressible(vector, policy, owner_id, creator, caller)
        if reason:
            vectors[name] = {"skip": reason}
            continue
        if answered_by_refusals(vector, policy, owner_type, vector_role):
            vectors[name] = {"refusals": True, "policy": policy, "owner_type": owner_type}
            continue
        if (
            refusals is not None
            and "cell" in refusals
            and answered_as_creator(vector, policy, owner_type, vector_role)
        ):
            vectors[name] = {"refusals": "creator", "policy": policy, "owner_type": owner_type}
            refusals["creator"] = name
            continue
        entry = {"policy": policy, "owner_id": owner_id, "owner_type": owner_type}
        if RIDERS.get(name) in creating:  # its host's cell may serve it (decided once that cell is made)
            riding[name] = entry
        else:
            creating[name] = entry
    # the vectors' cells created at once (amp.at_once), judged in the vectors' order (the pooled cell
    # where its first member's would be, :func:`_pool`); then the riders whose host's cell cannot serve
    # them get cells of their own, the same way
    pool = _pool(amp, role, creating, creator, callers[role]) if role in callers else {}
    _create_vector_cells(amp, rec, text, _with_pool(creating, pool), vectors, owners)
    pooled = vectors.pop(POOL_CELL, None)
    if pool and (pooled is None or "cell" not in pooled):  # the pooled create failed: cells of their own
        _create_vector_cells(amp, rec, text, pool, vectors, owners)
        pooled = None
    for name, entry in list(riding.items()):
        hosting = vectors.get(RIDERS[name], {})
        if "cell" in hosting and all(hosting[k] == entry[k] for k in entry):  # the host's cell serves
            vectors[name] = {"cell": hosting["cell"], "create": hosting["create"], "joint": RIDERS[name]}
            vectors[name] |= entry
            joints.append((name, RIDERS[name]))
            del riding[name]
    _create_vector_cells(amp, rec, text, riding, vectors, owners)
    made: dict[str, Any] = {
        "text": text,
        "vectors": vectors,
        "refusals": refusals,
        "riders": {},
        "joints": {},
        "pool": None,
        "skip": missing.get(role),
    }
    if not owners:
        return made
    (owner_id,) = owners  # one owner template and one set of ids: one owner per group
    for caller_of in callers:
        asked = {
            name: entry
            for name, entry in vectors.items()
            if "cell" in entry and caller_role(amp, _BY_NAME[name]) == caller_of
        }
        if refusals is not None and "cell" in refusals and (caller_of == role or "creator" in refusals):
            asked[REFUSALS_CELL] = refusals  # the refusals cell raises the creator-search question too
        if pooled is not None and caller_of == role:
            asked[POOL_CELL] = pooled  # and so does the pooled cell
        if caller_of == role:
            made |= _role_pages(amp, rec, caller_of, owner_id, text, asked)
        elif asked:
            made["riders"][caller_of] = _role_pages(amp, rec, caller_of, owner_id, text, asked)
    if pooled is not None:
        _pool_sequence(amp, rec, made, pooled, pool, role, owner_id)
    if refusals is not None and "cell" in refusals:
        _refusal_sequence(amp, rec, refusals)
        if "creator" in refusals and "creator DELETE" not in refusals["at"] and "failure" not in refusals:
            # the sequence ended before the creator's DELETE (a stranger's DELETE not refused, a skip):
            # the creator's vector gets a cell and pages of its own, so its verdict is its own
            name = refusals["creator"]
            entry = {k: vectors[name][k] for k in ("policy", "owner_type")} | {"owner_id": owner_id}
            try:
                fresh = _matrix_cell(amp, rec, text, entry)
            except CheckFailure as failure:
                vectors[name] = {"failure": rec.failure(failure)}
            else:
                fresh["pages"] = _role_pages(amp, rec, "a", owner_id, text, {name: fresh})
                vectors[name] = fresh
    for rider, host in joints:
        made["joints"][host] = _joint_sequence(amp, rec, made, rider, host)
    return made


#: The pooled cell's entry among a group's cells while they are created and its pages read (:func:`_pool`).
POOL_CELL = "(the pooled refusals cell)"


def poolable(vector: Mapping[str, Any]) -> bool:
    """Whether ``vector`` may be asked on its group's pooled cell (:func:`_pool`): read and write
    expected refused, the write asked through PATCH at most (no archive, no DELETE), and no cell
    shared with another vector (:data:`HOMES`, :data:`RIDERS`)."""
    return (
        not vector["expect"]["read"]["allowed"]
        and not vector["expect"]["write"]["allowed"]
        and "DELETE" not in write_surfaces(vector)
        and vector["name"] not in HOMES
        and vector["name"] not in RIDERS.values()
    )


def _pool(
    amp: Amp, role: str, creating: Mapping[str, Mapping[str, Any]], creator: str, caller: str
) -> dict[str, dict[str, Any]]:
    """The group's vectors asked first on one pooled cell (group testing), by name: every
    :func:`poolable` vector of ``creating`` that ``role`` (agent ``caller``) calls, when there are two
    or more. The pooled cell holds every member's readable_by and writable_by patterns (the members'
    one owner and type, a private cell); each member expects its caller refused everything, and any
    entry that matches grants (AMP-ACL-01/-03), so when every surface refuses the caller on the pooled
    cell, every member's own patterns refuse it too: each member judges the pooled cell's replies as
    its own. When anything there is not a plain refusal, each member gets the cell of its own it had
    before (:func:`_pool_sequence`): a wrong decision is always found on the vector's own policy and
    judged with its own stance. Empty when nothing pools."""
    members = {
        name: dict(entry)
        for name, entry in creating.items()
        if poolable(_BY_NAME[name]) and caller_role(amp, _BY_NAME[name]) == role
    }
    owners = {(entry["owner_id"], entry["owner_type"]) for entry in members.values()}
    if len(members) < 2 or len(owners) > 1:
        return {}
    ((owner_id, _),) = owners
    policy = _pooled_policy(members)
    if any(expected_decision(policy, owner_id, creator, caller, action) for action in ("read", "write")):
        return {}  # cannot happen while each member's own policy refuses its caller (expressible)
    return members


def _pooled_policy(members: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The pooled cell's policy: private, with every member's patterns, in the members' order."""
    return {
        "public": False,
        **{
            key: list(dict.fromkeys(p for entry in members.values() for p in entry["policy"][key]))
            for key in ("readable_by", "writable_by")
        },
    }


def _with_pool(
    creating: Mapping[str, Mapping[str, Any]], pool: Mapping[str, Mapping[str, Any]]
) -> dict[str, Mapping[str, Any]]:
    """``creating`` with the pool's members replaced by the pooled cell, where its first member was."""
    if not pool:
        return dict(creating)
    first = next(iter(pool.values()))
    pooled = {**first, "policy": _pooled_policy(pool)}
    entries: dict[str, Mapping[str, Any]] = {}
    for name, entry in creating.items():
        if name not in pool:
            entries[name] = entry
        elif not entries.get(POOL_CELL):
            entries[POOL_CELL] = pooled
    return entries


def _pool_sequence(
    amp: Amp,
    rec: Recorder,
    made: dict[str, Any],
    pooled: Mapping[str, Any],
    pool: Mapping[str, Mapping[str, Any]],
    role: str,
    owner_id: str,
) -> None:
    """The pooled cell asked once the pages are read: the caller's GET and, when a member writes, its
    harmless content PATCH. When the cell was stored as sent (policy, created_by), both answers are
    403 and no page shows the cell (a paging failure is each member's finding, raised as on its own
    cell), each member's entry is the pooled cell with where those replies sit ({"pool"}). Else each
    member gets the cell of its own it had before, and the caller's pages again (its entry as any
    vector's, with its own "pages"), so its verdict is its own."""
    cell = pooled["cell"]
    path = f"/memories/{cell['id']}"
    client = amp.as_agent(role)
    at: dict[str, int | None] = {}
    replies = [client.get(path)]
    at["GET"] = rec.position(replies[0])
    if any("PATCH" in write_surfaces(_BY_NAME[name]) for name in pool):
        probe = {"content": {"text": made["text"], "metadata": {"acl_probe": "pooled"}}}
        replies.append(client.patch(path, probe))
        at["PATCH"] = rec.position(replies[-1])
    stored = cell.get("access_policy")
    policy = pooled["policy"]
    shown_anywhere = any(
        cell["id"] in ids for surface in ("list", "search") for _, ids in made[surface]["pages"]
    )
    if (
        isinstance(stored, dict)
        and {k: stored.get(k) for k in policy} == policy
        and (cell.get("identity") or {}).get("created_by") == amp.agent_id("a")
        and all(reply.status == 403 for reply in replies)
        and not shown_anywhere
    ):
        for name in pool:
            made["vectors"][name] = {**pooled, "pool": at, "members": list(pool)}
        made["pool"] = {"cell": cell, "caller": role}
        return
    _create_vector_cells(amp, rec, made["text"], pool, made["vectors"], set())
    fresh = {name: made["vectors"][name] for name in pool if "cell" in made["vectors"][name]}
    if fresh:
        pages = _role_pages(amp, rec, role, owner_id, made["text"], fresh)
        for entry in fresh.values():
            entry["pages"] = pages


def _create_vector_cells(
    amp: Amp,
    rec: Recorder,
    text: str,
    entries: Mapping[str, Mapping[str, Any]],
    vectors: dict[str, dict[str, Any]],
    owners: set[str],
) -> None:
    """The cells of ``entries`` (by vector name) created by agent "a" at once, each judged in order as
    a step: the vector gets its cell, or the failure that stopped its create (raised by its check)."""
    client = amp.as_agent("a")
    bodies = [amp.cell_body(_matrix_body(text, entry)) for entry in entries.values()]
    sent = amp.at_once(*(partial(client.post, "/memories", body) for body in bodies))
    for (name, entry), reply in zip(entries.items(), sent, strict=True):
        try:
            vectors[name] = _matrix_entry(amp, rec, reply, entry)
        except CheckFailure as failure:
            vectors[name] = {"failure": rec.failure(failure)}
            continue
        owners.add(str(entry["owner_id"]))


def _matrix_body(text: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The create body of a vector's cell (``entry``: its rendered policy, owner and owner type)."""
    return {
        "content": {"text": text},
        "identity": {"owner_id": entry["owner_id"], "owner_type": entry["owner_type"]},
        "access_policy": entry["policy"],
    }


def _matrix_entry(amp: Amp, rec: Recorder, reply: Reply, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The entry with the cell ``reply`` created (a step, as ``amp.create_cell`` judges it) and where
    its create sits among the group's exchanges."""
    cell = amp.created_cell(reply)
    at = rec.position(reply)
    assert at is not None  # the reply's exchange is the check's
    return {"cell": cell, "create": at, **entry}


def _matrix_cell(amp: Amp, rec: Recorder, text: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """A vector's cell, created by agent "a" on its own: :func:`_matrix_entry`."""
    return _matrix_entry(
        amp, rec, amp.as_agent("a").post("/memories", amp.cell_body(_matrix_body(text, entry))), entry
    )


def _role_pages(
    amp: Amp, rec: Recorder, role: str, owner_id: str, text: str, asked: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """``role``'s list and search of the group's owner (every page), and the creator's search when
    a cell of ``asked`` raises its question: {"list", "search", "creator_search"}."""
    client = amp.as_agent(role)
    limit = page_size(amp)
    made: dict[str, Any] = {}
    made["list"] = all_pages(
        amp,
        rec,
        lambda offset: client.get(
            "/memories", params={"owner_id": owner_id, "limit": limit, "offset": offset}
        ),
        "listing the owner's cells",
    )
    made["search"] = all_pages(
        amp,
        rec,
        lambda offset: client.post(
            "/memories/search", {"query": text, "owner_id": owner_id, "limit": limit, "offset": offset}
        ),
        "searching the owner's cells",
    )
    # the creator's own search of the same cells (it may read them all, AMP-ACL-08): a cell missing
    # from both searches while the caller's GET and list show it is a search losing results, not an
    # access decision. Only a cell the caller's list shows and its search misses raises that question,
    # so the creator searches only then (a check needing it finds it made: its condition holds here)
    made["creator_search"] = None
    if role == "a":
        made["creator_search"] = made["search"]
    elif _listed_not_searched(made, asked):
        creator_client = amp.as_agent("a")
        made["creator_search"] = all_pages(
            amp,
            rec,
            lambda offset: creator_client.post(
                "/memories/search", {"query": text, "owner_id": owner_id, "limit": limit, "offset": offset}
            ),
            "searching the owner's cells as their creator",
        )
    return made


def _joint_sequence(amp: Amp, rec: Recorder, made: dict[str, Any], rider: str, host: str) -> dict[str, Any]:
    """The host's cell asked for both vectors once the pages are read (:data:`RIDERS`), in the order
    each would ask its own: the rider's GET and content PATCH (refused: the cell unchanged), the host's
    GET and archiving PATCH (the creator archives when that PATCH did not), the rider's DELETE of the
    archived cell, then the host's. Where the replies sit, by name ({"at"}); a step that broke is kept,
    frozen, for both. When the rider's DELETE was not refused the cell may be gone: the host then gets
    a cell of its own and its own pages (its entry as any vector's), so its verdict is its own."""
    entry = made["vectors"][host]
    path = f"/memories/{entry['cell']['id']}"
    rider_client = amp.as_agent(caller_role(amp, _BY_NAME[rider]))
    host_role = caller_role(amp, _BY_NAME[host])
    host_client = amp.as_agent(host_role)
    at: dict[str, Any] = {}
    joint: dict[str, Any] = {"at": at}

    def sent(name: str, reply: Reply) -> Reply:
        at[name] = rec.position(reply)
        return reply

    try:
        sent("rider GET", rider_client.get(path))
        probe = {"content": {"text": made["text"], "metadata": {"acl_probe": rider}}}
        sent("rider PATCH", rider_client.patch(path, probe))
        sent("host GET", host_client.get(path))
        reply = sent("host PATCH", host_client.patch(path, {"lifecycle": {"status": "archived"}}))
        if not (reply.status == 200 and _archived(reply)):
            amp.archive(entry["cell"]["id"])  # the DELETEs are asked of an archived cell (access alone)
        gone = 200 <= sent("rider DELETE", rider_client.delete(path)).status < 300
        if not gone:
            sent("host DELETE", host_client.delete(path))
    except CheckFailure as failure:
        joint["failure"] = rec.failure(failure)
        return joint
    if gone:
        own = {k: entry[k] for k in ("policy", "owner_id", "owner_type")}
        try:
            fresh = _matrix_cell(amp, rec, made["text"], own)
        except CheckFailure as failure:
            made["vectors"][host] = {"failure": rec.failure(failure)}
            return joint
        fresh["pages"] = _role_pages(amp, rec, host_role, own["owner_id"], made["text"], {host: fresh})
        made["vectors"][host] = fresh
    return joint


def _listed_not_searched(made: Mapping[str, Any], vectors: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether the caller's list shows a cell of the group that its search does not (or either paging
    stopped early): the case in which a vector asks the creator's search."""
    if made["list"]["failure"] is not None or made["search"]["failure"] is not None:
        return True
    listed = {cell_id for _, ids in made["list"]["pages"] for cell_id in ids}
    searched = {cell_id for _, ids in made["search"]["pages"] for cell_id in ids}
    cells = {entry["cell"]["id"] for entry in vectors.values() if "cell" in entry}
    return bool((cells & listed) - searched)


def seen_in(surface: Mapping[str, Any], cell_id: str, reply_at: Callable[[int], Reply]) -> tuple[bool, Reply]:
    """Whether the shared pages show ``cell_id``, with the page that shows it (else the last page); the
    failure that stopped the paging is raised here, in each check that needs the surface."""
    for offset, ids in surface["pages"]:
        if cell_id in ids:
            return True, reply_at(offset)
    if surface["failure"] is not None:
        raise _thawed(surface["failure"], reply_at)
    return False, reply_at(surface["pages"][-1][0])


# ----------------------------------------------------------------------------------- the matrix


#: The vector whose group makes the stranger-refusals cell (its group is the refusal checks' unit).
REFUSALS_VECTOR: dict[str, Any] = next(v for v in VECTORS if v["name"] == "default-policy-refuses-a-stranger")


def _group_keys(vector: Mapping[str, Any]) -> list[GroupKey]:
    """The groups a vector's cell may be made in: its home's, with the keyed caller and the keyless
    one (:func:`caller_role`), which the same vectors share."""
    home = _home(vector)
    owner = str((home.get("owner") or {}).get("id", ""))
    roles = dict.fromkeys((str(home["caller"]), str(home.get("keyless_caller", home["caller"]))))
    return [(role, owner, _CHUNK[home["name"]]) for role in roles]


def _group_step(key: GroupKey) -> Step[Amp, dict[str, Any], Reply]:
    return Step(_group_name(key), lambda maker, rec: make_group(maker, rec, key), roles=("a",), reply=Reply)


#: The matrix's groups, each a shared step (by name): a parallel run keeps the checks of one group
#: (those of its vectors and guests, and the refusal checks for the refusals' group) in one work unit.
GROUPS: dict[str, Step[Amp, dict[str, Any], Reply]] = {}
for _key in dict.fromkeys(key for vector in VECTORS for key in _group_keys(vector)):
    GROUPS[_group_name(_key)] = _group_step(_key)


def group_steps(vector: Mapping[str, Any]) -> tuple[Step[Amp, dict[str, Any], Reply], ...]:
    """The shared steps (``uses=``) of ``vector``'s check: its group's (the first, its work unit), and
    the refusals' group's when the refusals may answer it (:func:`answered_by_refusals`, seen
    before the ids are at hand: agent "b", a fresh owner, the default policy, everything refused)."""
    keys = _group_keys(vector)
    raw = vector.get("policy") or {}
    if (
        vector["caller"] == "b"
        and not (vector.get("owner") or {}).get("id")
        and not any(raw.get(k) for k in ("public", "readable_by", "writable_by"))
        and not vector["expect"]["read"]["allowed"]
        and not vector["expect"]["write"]["allowed"]
    ):
        keys += _group_keys(REFUSALS_VECTOR)
    return tuple(GROUPS[_group_name(key)] for key in dict.fromkeys(keys))


def group_of(amp: Amp, key: GroupKey) -> Made[dict[str, Any], Reply]:
    """The group ``key`` (made by the first check that asks), as this check reads it."""
    return GROUPS[_group_name(key)](amp)


def _marks(vector: Mapping[str, Any]) -> Any:
    """The vector's own @check mark (pytest.param takes the MarkDecorator that check() returns)."""
    ids = list(dict.fromkeys([*vector["requirements"], *SURFACE_IDS]))
    return check(*ids, uses=group_steps(vector))


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


@pytest.mark.parametrize("vector", [pytest.param(v, id=v["name"], marks=_marks(v)) for v in VECTORS])
def test_access_matrix(amp: Amp, vector: dict[str, Any]) -> None:
    """Access matrix: the caller gets the vector's decision on GET, search, list, PATCH and DELETE alike."""
    key = group_key(amp, vector)
    shown_group = group_of(amp, key)
    group, reply_at = shown_group.value, shown_group.reply_at

    made = group["vectors"][vector["name"]]
    if "skip" in made:
        amp.skip(made["skip"])
    if "failure" in made:
        raise _thawed(made["failure"], reply_at)
    role = caller_role(amp, vector)
    creator = amp.agent_id("a")
    caller = amp.agent_id(role)
    replies_at: Callable[[int], Reply] = reply_at
    # the caller's pages: the group's, a rider's caller's (RIDERS), or a host's own (its fallback cell)
    pages = made.get("pages") or (group if role == key[0] else group["riders"][role])
    sent: dict[str, Reply] = {}  # replies a shared sequence holds (then this check sends none)
    deferred: CheckFailure | None = None  # the refusals' broken archive: the creator's own step
    if made.get("refusals") == "creator":  # the refusals cell's creator (answered_as_creator)
        refusals = group["refusals"]
        made = {
            **made,
            "cell": refusals["cell"],
            "create": refusals["at"]["create"],
            "owner_id": refusals["owner"],
        }
        pages = group["riders"]["a"]
        sent = {
            s: reply_at(refusals["at"][f"creator {s}"])
            for s in ("GET", "PATCH", "DELETE")
            if f"creator {s}" in refusals["at"]
        }
        if "failure" in refusals:  # raised where the creator's own archive would have raised it
            deferred = _thawed(refusals["failure"], reply_at)
    elif made.get("refusals"):
        held = (group, reply_at) if holds_refusals(amp, key) else None
        made, pages, replies_at, sent = _refusals_as_vector(amp, made, held)
    elif "pool" in made:  # the group's pooled cell refused the caller everything (_pool)
        asked = ("GET", *write_surfaces(vector))
        sent = {surface: reply_at(at) for surface, at in made["pool"].items() if surface in asked}
        others = ", ".join(name for name in made["members"] if name != vector["name"])
        amp.note(
            f"asked on one cell pooling this vector's policy with the policies of {others}, each refusing "
            "this caller everything: every surface refused it there, so each pattern refuses it (any "
            "entry that matched would grant); had any not refused it, each vector would have been asked "
            "on a cell of its own"
        )
    joint = group["joints"].get(made.get("joint") or ("" if "pages" in made else vector["name"]))
    if joint is not None:  # a rider and its host: the sequence asked on the host's cell for both
        if "failure" in joint:
            raise _thawed(joint["failure"], reply_at)
        side = "host" if vector["name"] in group["joints"] else "rider"
        sent = {surface: reply_at(joint["at"][f"{side} {surface}"]) for surface in ("GET", "PATCH", "DELETE")}
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
        reply = client.patch(
            path, {"content": {"text": group["text"], "metadata": {"acl_probe": vector["name"]}}}
        )
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


#: Requirements whose question includes the write decision (the read/write split, writable_by, the
#: bypasses, the default policy): a vector citing one is always asked to write.
WRITE_IDS = frozenset({"AMP-ACL-02", "AMP-ACL-03", "AMP-ACL-07", "AMP-ACL-08", "AMP-ACL-09"})


def write_surfaces(vector: Mapping[str, Any]) -> tuple[str, ...]:
    """The surfaces the vector writes through. Both PATCH and DELETE (which must agree, AMP-ACL-02)
    when the vector cites a requirement about the write decision (:data:`WRITE_IDS`) or expects the
    write allowed (the caller's DELETE then removes the cell, which costs nothing). A vector that only
    varies the matching rule (AMP-ACL-04/-06, asked "via GET") and expects the write refused asks the
    write once, through PATCH, when it names a ``writable_by`` pattern or its read is allowed (a read
    grant must not grant the write; the refusal's shape, AMP-ACL-10, shows there); with neither, its
    write decision is the default refusal of a stranger, which default-policy-refuses-a-stranger asks on
    both surfaces, and its GET shows the refusal: it asks no write."""
    if vector["expect"]["write"]["allowed"] or WRITE_IDS & set(vector["requirements"]):
        return WRITE_SURFACES
    if (vector.get("policy") or {}).get("writable_by") or vector["expect"]["read"]["allowed"]:
        return ("PATCH",)
    return ()


def _archived(reply: Reply) -> bool:
    try:
        body = reply.json()
    except AssertionError:
        return False
    lifecycle = body.get("lifecycle") if isinstance(body, dict) else None
    return isinstance(lifecycle, dict) and lifecycle.get("status") == "archived"


def _broken_rule(expected: Mapping[str, Any], caller: str, owner_id: str, creator: str) -> str:
    """The requirement a wrong decision breaks: the vector's, except that a refused owner or creator
    breaks the owner (AMP-ACL-07) or creator (AMP-ACL-08) bypass, whatever policy the vector tries."""
    if expected["allowed"] and caller == owner_id:
        return "AMP-ACL-07"
    if expected["allowed"] and caller == creator:
        return "AMP-ACL-08"
    return str(expected["requirement"])


# ------------------------------------------------------------------------ the other ACL checks


#: The policy the matrix's default-policy vectors render to ({} in matrix.json), sent explicitly.
DEFAULT_POLICY: dict[str, Any] = {"public": False, "readable_by": [], "writable_by": []}


#: The refusals cell's entry among a group's cells when the group asks whether its creator must search.
REFUSALS_CELL = "(the stranger-refusals cell)"


def holds_refusals(amp: Amp, key: GroupKey) -> bool:
    """Whether the matrix group ``key`` makes the stranger-refusals cell: default-policy-refuses-a-
    stranger's group (agent "b", a fresh owner, its chunk), whose caller and owner are the refusals'
    and whose list and search of that owner are the refusals' pages."""
    return key == group_key(amp, REFUSALS_VECTOR)


def _make_refusals_cell(amp: Amp, rec: Recorder, text: str, owner: str) -> dict[str, Any]:
    """The stranger-refusals cell: a default-policy cell (the policy sent explicitly) of agent "a" for
    the group's fresh owner, with the group's text. A failed create is kept, frozen, for the checks that
    use the refusals (never the group's other vectors)."""
    body = {
        "content": {"text": text},
        "identity": {"owner_id": owner, "owner_type": "user"},
        "access_policy": dict(DEFAULT_POLICY),
    }
    try:
        cell = amp.create_cell(body)
    except CheckFailure as failure:
        return {"failure": rec.failure(failure)}
    return {"cell": cell, "owner": owner, "at": {"create": rec.position(amp.evidence.exchanges[-1])}}


def _refusal_sequence(amp: Amp, rec: Recorder, refusals: dict[str, Any]) -> None:
    """What agent "b" asks of the stranger-refusals cell once its group's pages are read (b's list and
    search of the owner come first, before any write): b's GET, PATCH and (once archived) DELETE, b's
    GET of an unknown id, then, once "a" has deleted the cell, b's GET of it again. The replies (by
    where they sit among the group's exchanges) serve the two refusal checks and the matrix vectors
    whose question is the same stranger's under the default policy (:func:`answered_by_refusals`); the
    creator's archive and DELETE, and its GET before them when a vector asks it (``refusals["creator"]``,
    :func:`answered_as_creator`), sit there too ("creator GET", "creator PATCH", "creator DELETE"). A
    step that breaks is kept, frozen, for those checks alone."""
    cell = refusals["cell"]
    path = f"/memories/{cell['id']}"
    stranger = amp.as_agent("b")
    at: dict[str, Any] = refusals["at"]

    def sent(name: str, reply: Reply) -> Reply:
        at[name] = rec.position(reply)
        return reply

    creator = amp.as_agent("a")
    deletion: Frozen | None = None
    try:
        sent("GET", stranger.get(path))
        sent("PATCH", stranger.patch(path, {"content": {"text": "a stranger's edit"}}))
        sent("unknown", stranger.get(f"/memories/{amp.unknown_id()}"))
        if "creator" in refusals:  # creator-with-the-default-policy's read (answered_as_creator)
            sent("creator GET", creator.get(path))
        # DELETE is tried on an archived cell: a refusal there is about access alone
        amp.archived_step(sent("creator PATCH", creator.patch(path, {"lifecycle": {"status": "archived"}})))
        refused = not 200 <= sent("DELETE", stranger.delete(path)).status < 300
        if refused:
            try:
                amp.deleted_step(sent("creator DELETE", creator.delete(path)))
            except PreconditionFailed as failure:
                deletion = rec.failure(failure)
        if deletion is None:
            sent("deleted", stranger.get(path))
    except CheckFailure as failure:
        refusals["failure"] = rec.failure(failure)
    except pytest.skip.Exception as exc:
        refusals["skip"] = str(exc.msg or exc)
    refusals["deletion"] = deletion


def _refusals(
    amp: Amp, held: tuple[dict[str, Any], Callable[[int], Reply]] | None = None
) -> tuple[dict[str, Any], dict[str, Any], Callable[[int], Reply]]:
    """The group holding the stranger-refusals cell, its refusals entry and where its replies sit in
    this check's evidence (``held``: that group and its replies, when the check already holds them);
    the group is made by whichever check needs it first. A step of the refusals that broke is raised
    here, in each check that uses them."""
    if held is None:
        shown_group = group_of(amp, group_key(amp, REFUSALS_VECTOR))
        held = (shown_group.value, shown_group.reply_at)
    group, replies_at = held
    refusals = group["refusals"]
    if refusals is None:  # no agent "b" (too few keys): the group made no refusals cell
        amp.skip(group["skip"] or "the stranger-refusals cell was not made")
    if "skip" in refusals:
        amp.skip(refusals["skip"])
    if "failure" in refusals:
        raise _thawed(refusals["failure"], replies_at)
    return group, refusals, replies_at


def answered_by_refusals(
    vector: Mapping[str, Any], policy: Mapping[str, Any], owner_type: str, role: str
) -> bool:
    """Whether the stranger-refusals cell asks ``vector``'s whole question: read and write expected
    refused and asked on every surface, the default policy, a fresh owner of type user, and agent "b"
    calling (default-policy-refuses-a-stranger, and with API keys the sorting-before vector, whose
    caller is then "b" too). Its check then judges the refusals' replies and sends nothing itself."""
    return (
        not vector["expect"]["read"]["allowed"]
        and not vector["expect"]["write"]["allowed"]
        and write_surfaces(vector) == WRITE_SURFACES
        and dict(policy) == DEFAULT_POLICY
        and not (vector.get("owner") or {}).get("id")
        and owner_type == "user"
        and role == "b"
    )


def answered_as_creator(
    vector: Mapping[str, Any], policy: Mapping[str, Any], owner_type: str, role: str
) -> bool:
    """Whether the stranger-refusals cell also asks ``vector``'s whole question as its creator's: read
    and write expected allowed and asked on every surface, the default policy, a fresh owner of type
    user, and agent "a" calling (creator-with-the-default-policy). The refusal sequence then holds the
    creator's GET (added for it), its archiving PATCH and, once the stranger's DELETE is refused, its
    DELETE: the requests that vector's own cell would be asked, in the same order."""
    return (
        vector["expect"]["read"]["allowed"] is True
        and vector["expect"]["write"]["allowed"] is True
        and write_surfaces(vector) == WRITE_SURFACES
        and dict(policy) == DEFAULT_POLICY
        and not (vector.get("owner") or {}).get("id")
        and owner_type == "user"
        and role == "a"
    )


def _refusals_as_vector(
    amp: Amp, made: Mapping[str, Any], held: tuple[dict[str, Any], Callable[[int], Reply]] | None
) -> tuple[dict[str, Any], dict[str, Any], Callable[[int], Reply], dict[str, Reply]]:
    """The stranger-refusals cell as a matrix vector's: its entry, its pages (its group's), where its
    replies sit in this check's evidence and the GET, PATCH and DELETE it sent (``held``: the vector's
    own group and replies, when that group is the refusals')."""
    shared, refusals, reply_at = _refusals(amp, held)
    entry = {
        "cell": refusals["cell"],
        "create": refusals["at"]["create"],
        "policy": made["policy"],
        "owner_id": refusals["owner"],
        "owner_type": made["owner_type"],
    }
    sent = {name: reply_at(refusals["at"][name]) for name in ("GET", "PATCH", "DELETE")}
    return entry, shared, reply_at, sent


#: The refusal checks' work unit in a parallel run: default-policy-refuses-a-stranger's, whose group
#: makes the cell they judge, so that one worker makes it once for all of them.
REFUSALS_STEPS = group_steps(REFUSALS_VECTOR)


@check("AMP-ACL-10", "AMP-ACL-09", uses=REFUSALS_STEPS)
def test_refusals_are_403_with_one_documented_code(amp: Amp) -> None:
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
def test_refusal_does_not_reveal_whether_the_cell_exists(amp: Amp) -> None:
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


@check("AMP-ACL-12", "AMP-ACL-14", uses=(POLICY_CELL,))
def test_policy_changes_take_effect_at_once(amp: Amp) -> None:
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


def spent_pooled_cell(amp: Amp) -> dict[str, Any] | None:
    """The pooled cell of the stranger-refusals group (:func:`_pool_sequence`), made by agent "a",
    when agent "b" was refused everything there (GET, PATCH, list and search): a cell whose members
    have judged all they asked of it (their replies are recorded while the group is made), which
    nothing reads again, and on which "b" holds no right, as on a default-policy cell. None when the
    group was not made already in this run without a problem (a check run alone, or after the
    group's own step failed, does not make it, nor answer for it), when the pooled cell fell back to
    the members' own cells, or when the group pooled nothing."""
    key = group_key(amp, REFUSALS_VECTOR)
    if not GROUPS[_group_name(key)].made(amp):
        return None
    group = group_of(amp, key).value
    pool = group["pool"]
    return pool["cell"] if pool is not None and pool["caller"] == "b" else None


@check("AMP-ACL-13", uses=REFUSALS_STEPS)
def test_nothing_in_the_body_raises_a_callers_rights(amp: Amp) -> None:
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
        reply = stranger.patch(path, patch)
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
