"""The access matrix's shared groups: per group (caller role, owner template, chunk) one owner, its
vectors' cells, the caller's list and search of that owner read once, the pooled cell of its refused
vectors, the rider and host sequence, and the stranger-refusals cell the refusal checks judge; each
group a declared shared step (:data:`GROUPS`), made by whichever check asks first."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import pytest
from ulid import ULID

from amp_conformance import Amp01Context
from amp_conformance.amp01.checks._support import about, expect_refusal
from amp_conformance.amp01.checks.access.vectors import (
    BY_NAME,
    HOMES,
    RIDERS,
    VECTORS,
    WRITE_SURFACES,
    Unexpressible,
    caller_role,
    expected_decision,
    expressible,
    home_of,
    render_vector,
    template_roles,
    write_surfaces,
)
from amp_conformance.amp01.context import Adopted
from amp_conformance.engine.client import Reply
from amp_conformance.engine.outcomes import CheckFailure, PreconditionFailed
from amp_conformance.engine.steps import Frozen, Made, Recorder, Step

MAX_PAGES = 20
DEFAULT_PAGE = 100


# --------------------------------------------------------------------------------------- helpers


def page_size(amp: Amp01Context) -> int:
    """The advertised max_page_size, or DEFAULT_PAGE when /spec cannot say (other checks report that)."""
    value = amp.capabilities.get("max_page_size")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else DEFAULT_PAGE


def find_in_pages(
    amp: Amp01Context, fetch: Callable[[int], Reply], cell_id: str, what: str
) -> tuple[bool, Reply]:
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


def listed(amp: Amp01Context, role: str, owner_id: str, cell_id: str) -> tuple[bool, Reply]:
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


def decision(amp: Amp01Context, reply: Reply, allowed: tuple[int, ...], what: str) -> bool:
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


# ----------------------------------------------------------------- the matrix's shared cells and pages

#: Where a vector's cell is listed and searched: the role calling, the owner template and the chunk.
#: Vectors with the same key share one owner, one list and one search (made once, by whichever of them
#: runs first). Chunks of at most GROUP_SIZE vectors keep each group's chain of requests short, and
#: each group is a declared shared step (:data:`GROUPS`, its checks' ``uses=``), so one work unit of
#: a parallel run, made once there too; each chunk costs one list and one search, so the chunks are
#: no smaller than a unit of a few seconds needs
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


def group_key(amp: Amp01Context, vector: Mapping[str, Any]) -> GroupKey:
    """The group a vector's cell is made in: its home's caller role, owner template and chunk."""
    home = home_of(vector)
    owner = str((home.get("owner") or {}).get("id", ""))
    return caller_role(amp, home), owner, _CHUNK[home["name"]]


def _group_name(key: GroupKey) -> str:
    role, owner, chunk = key
    return f"acl:matrix:{role}:{owner or 'a fresh owner'}:{chunk}"


def _thawed(frozen: Frozen, reply_at: Callable[[int], Reply]) -> CheckFailure:
    """A finding a group kept (``Recorder.failure``), raised again in the check it is about, with the
    same exchange."""
    return frozen.failure(reply_at(frozen.at).exchange if frozen.at is not None else None)


def all_pages(amp: Amp01Context, rec: Recorder, fetch: Callable[[int], Reply], what: str) -> dict[str, Any]:
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


def make_group(amp: Amp01Context, rec: Recorder, key: GroupKey) -> dict[str, Any]:
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
            if "cell" in entry and caller_role(amp, BY_NAME[name]) == caller_of
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
    amp: Amp01Context, role: str, creating: Mapping[str, Mapping[str, Any]], creator: str, caller: str
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
        if poolable(BY_NAME[name]) and caller_role(amp, BY_NAME[name]) == role
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
    amp: Amp01Context,
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
    if any("PATCH" in write_surfaces(BY_NAME[name]) for name in pool):
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
    amp: Amp01Context,
    rec: Recorder,
    text: str,
    entries: Mapping[str, Mapping[str, Any]],
    vectors: dict[str, dict[str, Any]],
    owners: set[str],
) -> None:
    """The cells of ``entries`` (by vector name) created by agent "a" at once, each judged in order as
    a step: the vector gets its cell, or the failure that stopped its create (raised by its check)."""
    amp.agent("a")  # the role taken before the creates run beside one another
    bodies = [amp.cell_body(_matrix_body(text, entry)) for entry in entries.values()]
    sent = amp.at_once(*(partial(amp.send_create, body) for body in bodies))
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


def _matrix_entry(
    amp: Amp01Context, rec: Recorder, reply: Reply | Adopted, entry: Mapping[str, Any]
) -> dict[str, Any]:
    """The entry with the cell ``reply`` created (a step, as ``amp.create_cell`` judges it) and where
    its create (or the list that showed a cell whose create's answer was lost) sits among the group's
    exchanges."""
    cell = amp.created_cell(reply)
    at = rec.position(reply.listing if isinstance(reply, Adopted) else reply)
    assert at is not None  # the reply's exchange is the check's
    return {"cell": cell, "create": at, **entry}


def _matrix_cell(amp: Amp01Context, rec: Recorder, text: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """A vector's cell, created by agent "a" on its own: :func:`_matrix_entry`."""
    return _matrix_entry(amp, rec, amp.send_create(amp.cell_body(_matrix_body(text, entry))), entry)


def _role_pages(
    amp: Amp01Context,
    rec: Recorder,
    role: str,
    owner_id: str,
    text: str,
    asked: Mapping[str, Mapping[str, Any]],
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


def _joint_sequence(
    amp: Amp01Context, rec: Recorder, made: dict[str, Any], rider: str, host: str
) -> dict[str, Any]:
    """The host's cell asked for both vectors once the pages are read (:data:`RIDERS`), in the order
    each would ask its own: the rider's GET and content PATCH (refused: the cell unchanged), the host's
    GET and archiving PATCH (the creator archives when that PATCH did not), the rider's DELETE of the
    archived cell, then the host's. Where the replies sit, by name ({"at"}); a step that broke is kept,
    frozen, for both. When the rider's DELETE was not refused the cell may be gone: the host then gets
    a cell of its own and its own pages (its entry as any vector's), so its verdict is its own."""
    entry = made["vectors"][host]
    path = f"/memories/{entry['cell']['id']}"
    rider_client = amp.as_agent(caller_role(amp, BY_NAME[rider]))
    host_role = caller_role(amp, BY_NAME[host])
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


#: The vector whose group makes the stranger-refusals cell (its group is the refusal checks' unit).
REFUSALS_VECTOR: dict[str, Any] = next(v for v in VECTORS if v["name"] == "default-policy-refuses-a-stranger")


#: The policy the matrix's default-policy vectors render to ({} in matrix.json), sent explicitly.
DEFAULT_POLICY: dict[str, Any] = {"public": False, "readable_by": [], "writable_by": []}


#: The refusals cell's entry among a group's cells when the group asks whether its creator must search.
REFUSALS_CELL = "(the stranger-refusals cell)"


def holds_refusals(amp: Amp01Context, key: GroupKey) -> bool:
    """Whether the matrix group ``key`` makes the stranger-refusals cell: default-policy-refuses-a-
    stranger's group (agent "b", a fresh owner, its chunk), whose caller and owner are the refusals'
    and whose list and search of that owner are the refusals' pages."""
    return key == group_key(amp, REFUSALS_VECTOR)


def _make_refusals_cell(amp: Amp01Context, rec: Recorder, text: str, owner: str) -> dict[str, Any]:
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


def _refusal_sequence(amp: Amp01Context, rec: Recorder, refusals: dict[str, Any]) -> None:
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
    amp: Amp01Context, held: tuple[dict[str, Any], Callable[[int], Reply]] | None = None
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
    amp: Amp01Context, made: Mapping[str, Any], held: tuple[dict[str, Any], Callable[[int], Reply]] | None
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


def _group_keys(vector: Mapping[str, Any]) -> list[GroupKey]:
    """The groups a vector's cell may be made in: its home's, with the keyed caller and the keyless
    one (:func:`caller_role`), which the same vectors share."""
    home = home_of(vector)
    owner = str((home.get("owner") or {}).get("id", ""))
    roles = dict.fromkeys((str(home["caller"]), str(home.get("keyless_caller", home["caller"]))))
    return [(role, owner, _CHUNK[home["name"]]) for role in roles]


def _group_step(key: GroupKey) -> Step[Amp01Context, dict[str, Any], Reply]:
    return Step(_group_name(key), lambda maker, rec: make_group(maker, rec, key), roles=("a",), reply=Reply)


#: The matrix's groups, each a shared step (by name): a parallel run keeps the checks of one group
#: (those of its vectors and guests, and the refusal checks for the refusals' group) in one work unit.
GROUPS: dict[str, Step[Amp01Context, dict[str, Any], Reply]] = {}
for _key in dict.fromkeys(key for vector in VECTORS for key in _group_keys(vector)):
    GROUPS[_group_name(_key)] = _group_step(_key)


def group_steps(vector: Mapping[str, Any]) -> tuple[Step[Amp01Context, dict[str, Any], Reply], ...]:
    """The shared steps (``uses=``) of ``vector``'s check: its group's, with the keyed caller and the
    keyless one (one work unit for both)."""
    return tuple(GROUPS[_group_name(key)] for key in _group_keys(vector))


def adopted_steps(vector: Mapping[str, Any]) -> tuple[Step[Amp01Context, dict[str, Any], Reply], ...]:
    """The steps (``adopts=``) ``vector``'s check may read although another group's checks make them:
    the refusals' group, when the refusals may answer it (:func:`answered_by_refusals`, seen before
    the ids are at hand: agent "b", a fresh owner, the default policy, everything refused; with API
    keys, the sorting-before vector of the next chunk too)."""
    raw = vector.get("policy") or {}
    if (
        vector["caller"] == "b"
        and not (vector.get("owner") or {}).get("id")
        and not any(raw.get(k) for k in ("public", "readable_by", "writable_by"))
        and not vector["expect"]["read"]["allowed"]
        and not vector["expect"]["write"]["allowed"]
    ):
        own = group_steps(vector)
        return tuple(step for step in group_steps(REFUSALS_VECTOR) if step not in own)
    return ()


def group_of(amp: Amp01Context, key: GroupKey) -> Made[dict[str, Any], Reply]:
    """The group ``key`` (made by the first check that asks), as this check reads it."""
    return GROUPS[_group_name(key)](amp)


def spent_pooled_cell(amp: Amp01Context) -> dict[str, Any] | None:
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


def _archived(reply: Reply) -> bool:
    try:
        body = reply.json()
    except AssertionError:
        return False
    lifecycle = body.get("lifecycle") if isinstance(body, dict) else None
    return isinstance(lifecycle, dict) and lifecycle.get("status") == "archived"
