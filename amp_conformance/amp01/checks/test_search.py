"""Search semantics: filters, paging, limits and ranking (AMP-SRCH-01…14, 17, 18; AMP-LIST-08).

Every search names its ``owner_id`` (C-11) and an owner only this run writes, so other data on the
server never changes what a check sees. Cells that must rank in a fixed order get ``decay_rate: 0`` and
distinct scores, so the order does not depend on timing. The checks that only search share the owners
``_shared_cells`` makes once per run (the owner set: five cells with identical texts, agent "b" may read
three of them); the stale-status checks share one owner's active and stale cell, made with the
lifecycle checks' shared first pass (no pass of their own), and therefore need ``--admin-token`` and
``--allow-global-effects``; without them they skip. Access control through search (AMP-SRCH-15) and
the 401 (AMP-SRCH-16) are checked with the ACL and auth areas.
"""

from __future__ import annotations

import json
import time
from functools import partial
from typing import Any

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._lifecycle_passes import RANKED_RATE, first_pass, ranked_cells, together
from amp_conformance.amp01.checks._shared_cells import (
    DELETED_SEARCHES,
    ids_by_rank,
    owner_set,
    owner_set_search,
    search_without_query,
    status_trio,
    unread_cell,
)
from amp_conformance.amp01.checks._support import (
    expect_refused_as_invalid,
    expect_step,
    expect_valid_cell,
    shown,
)
from amp_conformance.engine.client import Client, Reply
from amp_conformance.engine.exchange import Exchange

TEXT = "The user prefers Python for backend development"
STATUSES = ("active", "stale", "archived")


def _search(client: Client, owner: str, query: str = TEXT, **fields: Any) -> Reply:
    return client.post("/memories/search", {"query": query, "owner_id": owner, **fields})


def _page(amp: Amp01Context, reply: Reply, what: str) -> dict[str, Any]:
    """A 200 search page with a results array. Every check here searches one owner's cells: results
    of other owners mean the owner filter (AMP-SRCH-03) is broken, a step the others rely on."""
    amp.expect_status(reply, 200, what=what)
    body = reply.json_object()
    results = body.get("results")
    if not isinstance(results, list):
        amp.fail(f"{what}: results is not an array", reply)
    owner = _owner_asked(reply)
    if owner is not None:
        others = [c.get("id") for c in results if isinstance(c, dict) and _owner_of(c) != owner]
        expect_step(
            amp,
            not others,
            f"{what}: a search for one owner's cells returned {len(others)} cell(s) of other owners",
            reply,
            step="a search restricted to one owner",
            requirement="AMP-SRCH-03",
        )
    return body


def _owner_of(cell: dict[str, Any]) -> Any:
    identity = cell.get("identity")
    return identity.get("owner_id") if isinstance(identity, dict) else None


def _owner_asked(reply: Reply) -> str | None:
    """The owner_id the search request named, if any."""
    sent = reply.exchange.request_body
    try:
        request = json.loads(sent) if sent else None
    except ValueError:
        return None
    owner = request.get("owner_id") if isinstance(request, dict) else None
    return owner if isinstance(owner, str) else None


def _ids(amp: Amp01Context, reply: Reply, what: str = "search") -> list[str]:
    body = _page(amp, reply, what)
    return [str(c.get("id")) for c in body["results"] if isinstance(c, dict)]


def _cell(amp: Amp01Context, owner: str, *, as_agent: str = "a", text: str = TEXT, **fields: Any) -> str:
    cell = amp.create_cell(
        {"identity": {"owner_id": owner}, "content": {"text": text}, **fields}, as_agent=as_agent
    )
    return str(cell["id"])


def _ranked(importance: float, confidence: float = 1.0) -> dict[str, Any]:
    return {"scoring": {"importance": importance, "confidence": confidence, "decay_rate": 0}}


def _expect_ids(
    amp: Amp01Context,
    reply: Reply,
    expected: list[str],
    what: str,
    *,
    ordered: bool = False,
    requirement: str | None = None,
) -> None:
    """The search returned exactly ``expected`` (in that order, when ``ordered``); ``requirement``
    names the rule the results break when the check cites several."""
    got = _ids(amp, reply, what)
    if ordered:
        amp.expect(
            got == expected,
            f"{what}: the results are {shown(got)}, not {shown(expected)} in this order",
            reply,
            requirement=requirement,
        )
        return
    extra = sorted(set(got) - set(expected))
    missing = sorted(set(expected) - set(got))
    wrong = "; ".join(
        part
        for part in (
            f"{len(extra)} unexpected: {shown(extra)}" if extra else "",
            f"{len(missing)} missing: {shown(missing)}" if missing else "",
            f"duplicates in {shown(got)}" if not extra and not missing else "",
        )
        if part
    )
    amp.expect(sorted(got) == sorted(expected), f"{what}: {wrong}", reply, requirement=requirement)


# lifecycle helpers (stale cells need a pass) ---------------------------------------------------------


def _active_and_stale(amp: Amp01Context) -> tuple[str, str, str]:
    """(owner, active id, stale id): two cells with the same text (importance 0.9 and 0.2, decay_rate
    0), made with the lifecycle checks' shared first pass (``_lifecycle_passes``: no pass of their
    own) and listed after it; no check changes them, and a later pass leaves both where they are."""
    amp.agent("a")
    return first_pass(amp).step_twins(amp)


def _owner_search(amp: Amp01Context) -> tuple[dict[str, Any], Reply]:
    """The owner set and agent "a"'s plain search of its owner (TEXT, no other field), sent once per run:
    the shape, owner, types-omitted, default-limit and ranking checks each judge a different part of
    this one answer (the request only reads; every check judges the answer itself)."""
    shared = owner_set(amp)
    owner = shared["owner"]
    exchange = amp.shared("search:owner-set-plain", lambda a: _search(a.as_agent("a"), owner).exchange)
    return shared, Reply(exchange)


def _expect_complete(amp: Amp01Context, reply: Reply, expected: list[str], what: str) -> None:
    """Before a filter, a page or an order is judged: the search returned every cell in ``expected``
    (every matching cell the caller may read). A cell missing there is the search losing results (an
    approximate index that does not return every match), reported once under AMP-SRCH-01, whose
    check finds the owner's cells; the filter, paging and order checks built on it are blocked, not
    failed: their filters and order may be right, only cells are missing."""
    got = set(_ids(amp, reply, what))
    missing = [cell_id for cell_id in expected if cell_id not in got]
    expect_step(
        amp,
        not missing,
        f"{what}: results missing: {len(missing)} of the {len(expected)} matching cells the caller may "
        f"read are not returned ({shown(missing)}), so no filter or order can be judged on it",
        reply,
        step="a search returning every matching cell the caller may read",
        requirement="AMP-SRCH-01",
    )


def _owner_set_complete(amp: Amp01Context) -> tuple[dict[str, Any], Reply]:
    """The owner set and its plain search (:func:`_owner_search`), once the search is known to return
    all of the owner's cells (:func:`_expect_complete`)."""
    shared, reply = _owner_search(amp)
    _expect_complete(amp, reply, [m["cell"]["id"] for m in shared["cells"]], "search of the owner's cells")
    return shared, reply


# shape and validation ----------------------------------------------------------------------------------


@pytest.mark.smoke
@check("AMP-SRCH-01")
def test_search_answers_the_documented_shape_with_valid_cells(amp: Amp01Context) -> None:
    """A search answers {results, returned, has_more, offset, limit, query}; every result is a valid cell."""
    shared, reply = _owner_search(amp)
    made = [m["cell"]["id"] for m in shared["cells"]]
    body = _page(amp, reply, "search")
    kinds = {"returned": int, "has_more": bool, "offset": int, "limit": int, "query": str}
    for name, kind in kinds.items():
        value = body.get(name)
        amp.expect(
            isinstance(value, kind) and (kind is bool or not isinstance(value, bool)),
            f"{name} is a {kind.__name__} (got {shown(value)})",
            reply,
        )
    for cell in body["results"]:
        expect_valid_cell(amp, cell, reply, f"search result {cell.get('id')}")
    got = [c.get("id") for c in body["results"]]
    missing = [cell_id for cell_id in made if cell_id not in got]
    amp.expect(
        sorted(got) == sorted(made),
        f"the search finds the owner's {len(made)} cells {made} (got {got})"
        + (f"; results missing: {len(missing)} matching cell(s) not returned" if missing else ""),
        reply,
    )


@pytest.mark.smoke
@check("AMP-SRCH-02")
def test_search_without_query_is_422(amp: Amp01Context) -> None:
    """A search without query is refused with 422 VALIDATION_ERROR."""
    reply = search_without_query(amp)  # sent once per run (the error table judges it too)
    expect_refused_as_invalid(amp, reply)


# filters -------------------------------------------------------------------------------------------------


@pytest.mark.smoke
@check("AMP-SRCH-03")
def test_owner_filter_returns_only_that_owners_cells(amp: Amp01Context) -> None:
    """With owner_id, every result belongs to that owner (two owners, identical texts; the other owner's id
    has this one's as a prefix)."""
    shared, reply = _owner_set_complete(amp)
    mine = shared["owner"]
    expected = [m["cell"]["id"] for m in shared["cells"]]
    others = [shared["other"]["cell"]["id"]]
    body = _page(amp, reply, "search with owner_id")
    owners = {c.get("identity", {}).get("owner_id") for c in body["results"] if isinstance(c, dict)}
    amp.expect(
        owners <= {mine},
        f"every result belongs to {shown(mine)} (found owners {sorted(map(str, owners))})",
        reply,
    )
    _expect_ids(amp, reply, expected, "search with owner_id")
    amp.expect(not set(others) & set(_ids(amp, reply)), "no cell of the other owner is returned", reply)
    missing = amp.as_agent("a").post("/memories/search", {"query": TEXT})
    amp.note(f"search without owner_id answered {missing.status} (C-11: 422 and 200 are both documented)")


@pytest.mark.smoke
@check("AMP-SRCH-04")
def test_types_filter_restricts_results(amp: Amp01Context) -> None:
    """types restricts results to the listed types; omitted or null means all; unknown values are 422."""
    shared, plain = _owner_set_complete(amp)
    owner = shared["owner"]
    made: dict[str, list[str]] = {}
    for cell in shared["cells"]:
        made.setdefault(cell["body"]["type"], []).append(cell["cell"]["id"])
    every = [cell_id for ids in made.values() for cell_id in ids]
    client = amp.as_agent("a")
    _expect_ids(amp, _search(client, owner, types=["semantic"]), made["semantic"], 'types ["semantic"]')
    _expect_ids(
        amp,
        _search(client, owner, types=["episodic", "procedural"]),
        made["episodic"] + made["procedural"],
        'types ["episodic", "procedural"]',
    )
    _expect_ids(amp, plain, every, "types omitted")
    _expect_ids(amp, _search(client, owner, types=None), every, "types null")
    expect_refused_as_invalid(amp, _search(client, owner, types=["literal"]))


@pytest.mark.smoke
@check("AMP-SRCH-05", "AMP-LC-14", global_effects=True)
def test_default_search_leaves_stale_cells_out(amp: Amp01Context) -> None:
    """Without status or include_stale, search returns active cells only (a stale twin is left out)."""
    owner, active, _stale = _active_and_stale(amp)
    _expect_ids(amp, _search(amp.as_agent("a"), owner), [active], "default search", requirement="AMP-SRCH-05")


@pytest.mark.smoke
@check("AMP-SRCH-06", "AMP-LC-14", global_effects=True)
def test_include_stale_adds_stale_cells(amp: Amp01Context) -> None:
    """include_stale: true adds stale to the statuses searched (default and explicit ["active"])."""
    owner, active, stale = _active_and_stale(amp)
    client = amp.as_agent("a")
    default, active_too = together(
        amp,
        [
            partial(_search, client, owner, include_stale=True),
            partial(_search, client, owner, status=["active"], include_stale=True),
        ],
    )
    _expect_ids(amp, default, [active, stale], "include_stale: true", requirement="AMP-SRCH-06")
    _expect_ids(
        amp,
        active_too,
        [active, stale],
        'status ["active"] with include_stale: true',
        requirement="AMP-SRCH-06",
    )


@pytest.mark.smoke
@check("AMP-SRCH-07", global_effects=True)
def test_explicit_status_filter_is_honoured(amp: Amp01Context) -> None:
    """An explicit status list is honoured: ["stale"] returns only the stale cell."""
    owner, active, stale = _active_and_stale(amp)
    # the lifecycle checks' owner holds an archived cell (archived before their first pass)
    passes = first_pass(amp)
    archived = passes.ids["archived"]
    client = amp.as_agent("a")
    stale_only, both, reply = together(  # independent searches, sent at once, judged in order
        amp,
        [
            partial(_search, client, owner, status=["stale"]),
            partial(_search, client, owner, status=["active", "stale"]),
            partial(_search, client, passes.owner, status=["archived"]),
        ],
    )
    _expect_ids(amp, stale_only, [stale], 'status ["stale"]')
    _expect_ids(amp, both, [active, stale], 'status ["active", "stale"]')
    if passes.archive.status != 200:
        amp.note(f'status ["archived"] not observed: archiving the cell answered {passes.archive.status}')
        return
    found = archived in _ids(amp, reply, 'status ["archived"]') if reply.status == 200 else False
    amp.note(
        f'status ["archived"] {"returns" if found else "does not return"} the archived cell (C-06: either)'
    )


@pytest.mark.smoke
@check("AMP-SRCH-08")
def test_deleted_cells_are_never_returned(amp: Amp01Context) -> None:
    """Deleted cells never come back from search, whatever status or include_stale says (or 422)."""
    # one owner's active, archived and deleted cells, searched right after the delete (shared)
    made, replies = status_trio(amp)
    amp.archived_step(replies[made["archive"]])
    amp.deleted_step(replies[made["delete"]])
    kept, gone = made["kept"], made["gone"]
    # DELETED_SEARCHES: the default search first, then include_stale and the two status filters
    (_, default), *variants = zip(DELETED_SEARCHES, made["searches"], strict=True)
    # AMP-SRCH-08 restates AMP-DEL-05 (a deleted cell never appears in search or list) for search: the
    # default search finds the active cell of the query's text (the other active one, of another text,
    # may or may not be returned), never the deleted one
    got = _ids(amp, replies[default], "default search after a delete")
    amp.expect(
        kept in got and gone not in got and set(got) <= {kept, made["relevant"]},
        f"default search after a delete: the results are {shown(got)}, not the active cell {kept} "
        f"(and perhaps {made['relevant']}) without the deleted {gone}",
        replies[default],
        requirement="AMP-DEL-05",
    )
    for fields, at in variants:
        reply = replies[at]
        if reply.status == 422 and "deleted" in fields.get("status", []):
            expect_refused_as_invalid(amp, reply)
            continue
        ids = _ids(amp, reply, f"search with {shown(fields)}")
        amp.expect(
            gone not in ids,
            f"search with {shown(fields)} returned the deleted cell {gone}",
            reply,
            requirement="AMP-DEL-05",
        )


# paging and limits -------------------------------------------------------------------------------------


@pytest.mark.smoke
@check("AMP-SRCH-09")
def test_search_limit_bounds(amp: Amp01Context) -> None:
    """limit defaults to 10 and must be 1..max_page_size: 0, -1 and max_page_size + 1 are 422."""
    shared, plain = _owner_search(amp)
    owner = shared["owner"]
    client = amp.as_agent("a")
    ceiling = amp.max_page_size
    default = _page(amp, plain, "search without limit")
    amp.expect(
        default.get("limit") == 10, f"the default limit 10 is echoed (got {shown(default.get('limit'))})"
    )
    # limit = max_page_size and max_page_size + 1 are the run's shared searches of the owner set
    # (AMP-CAP-06 asks the same limits of it)
    for limit in (1, ceiling):
        reply = (
            owner_set_search(amp, limit=limit)[1] if limit == ceiling else _search(client, owner, limit=limit)
        )
        body = _page(amp, reply, f"search with limit {limit}")
        amp.expect(body.get("limit") == limit, f"limit {limit} is echoed (got {shown(body.get('limit'))})")
    for limit in (0, -1, ceiling + 1):
        reply = (
            owner_set_search(amp, limit=limit)[1]
            if limit == ceiling + 1
            else _search(client, owner, limit=limit)
        )
        expect_refused_as_invalid(amp, reply)


@pytest.mark.smoke
@check("AMP-SRCH-10")
def test_offset_counts_only_results_the_caller_may_read(amp: Amp01Context) -> None:
    """offset skips results the caller can read, in ranked order; a negative offset is 422."""
    shared, _ = _owner_set_complete(amp)  # "b" may read 3 of its 5 cells, interleaved with the 2 it may not
    owner, readable = shared["owner"], shared["readable"]
    client = amp.as_agent("b")
    # the question presumes search shows the caller only what it may read (AMP-SRCH-15)
    reply = _search(client, owner, limit=10)
    view = [str(c.get("id")) for c in _page(amp, reply, "search of the owner").get("results", [])]
    expect_step(
        amp,
        set(view) <= set(readable),
        f"search shows the caller {len(set(view) - set(readable))} cell(s) it may not read",
        reply,
        step="a search showing the caller only its readable cells",
        requirement="AMP-SRCH-15",
    )
    # the owner's search finds all of its cells (above): one the caller may read and does not see is
    # hidden from it by the access rule, a step this check relies on (AMP-SRCH-15 makes search show
    # what GET would)
    hidden = [cell_id for cell_id in readable if cell_id not in view]
    expect_step(
        amp,
        not hidden,
        f"search hides {len(hidden)} cell(s) the caller may read ({shown(hidden)})",
        reply,
        step="a search showing the caller every cell it may read",
        requirement="AMP-SRCH-15",
    )
    # pages are slices of the caller's own ranked view (whether that order is right is AMP-SRCH-12's)
    for offset in range(0, len(view), 2):
        reply = _search(client, owner, limit=2, offset=offset)
        body = _page(amp, reply, f"search with limit 2, offset {offset}")
        expected = view[offset : offset + 2]
        _expect_ids(amp, reply, expected, f"limit 2, offset {offset} (the caller's cells #{offset + 1}+)")
        more = offset + 2 < len(view)
        amp.expect(
            body.get("has_more") is more,
            f"offset {offset}: has_more is {shown(body.get('has_more'))}, not {shown(more)}",
            reply,
            requirement="AMP-SRCH-11",
        )
    reply = _search(client, owner, limit=1, offset=len(view))
    body = _page(amp, reply, "search past the caller's last cell")
    amp.expect(
        body["results"] == [],
        f"past the caller's last cell the search still returns {len(body['results'])} result(s)",
        reply,
    )
    amp.expect(
        body.get("has_more") is False,
        f"past the end has_more is {shown(body.get('has_more'))}, not false",
        reply,
        requirement="AMP-SRCH-11",
    )
    expect_refused_as_invalid(amp, _search(client, owner, offset=-1))


@check("AMP-SRCH-11", "AMP-LIST-08")
def test_paging_fields_are_truthful_on_search_and_list(amp: Amp01Context) -> None:
    """returned counts the page, has_more says whether another page exists, offset/limit are echoed."""
    shared, _ = _owner_set_complete(amp)  # 5 cells, all readable by their creator "a"
    owner, count = shared["owner"], len(shared["cells"])
    client = amp.as_agent("a")

    def fetch(name: str, offset: int) -> Reply:
        if name == "search":
            return _search(client, owner, offset=offset, limit=2)
        return client.get("/memories", params={"owner_id": owner, "offset": offset, "limit": 2})

    for name in ("search", "list"):
        for offset, returned, more in ((0, 2, True), (count - 1, 1, False), (count, 0, False)):
            reply = fetch(name, offset)
            body = _page(amp, reply, f"{name} with offset {offset}, limit 2")
            where = f"{name} offset {offset}, limit 2 over {count} cells"
            rule = "AMP-SRCH-11" if name == "search" else "AMP-LIST-08"
            amp.expect(
                body.get("returned") == len(body["results"]) == returned,
                f"{where}: {len(body['results'])} results and returned {shown(body.get('returned'))}, "
                f"not {returned} and {returned}",
                reply,
                requirement=rule,
            )
            amp.expect(
                body.get("has_more") is more,
                f"{where}: has_more is {shown(body.get('has_more'))}, not {shown(more)}",
                reply,
                requirement=rule,
            )
            amp.expect(
                body.get("offset") == offset and body.get("limit") == 2,
                f"{where}: offset and limit echoed as {shown(body.get('offset'))} and "
                f"{shown(body.get('limit'))}, not {offset} and 2",
                reply,
                requirement=rule,
            )


UNICODE_QUERY = "Größe  of “Python” — 検索テスト 🐍 ü\u0301"


def _unicode_search(amp: Amp01Context) -> Reply:
    """Agent "a"'s search of a fresh owner (no cells) with a Unicode query, sent once per run: the echo
    check judges its query, the empty-page check its page (an owner without cells matches nothing)."""
    amp.agent("a")

    def send(a: Amp01Context) -> Exchange:
        return _search(a.as_agent("a"), a.owner(), UNICODE_QUERY).exchange

    return Reply(amp.shared("search:fresh-owner-unicode", send))


@pytest.mark.smoke
@check("AMP-SRCH-11")
def test_query_is_echoed_verbatim(amp: Amp01Context) -> None:
    """The query string comes back verbatim, including non-ASCII characters and inner spacing."""
    query = UNICODE_QUERY
    reply = _unicode_search(amp)  # AMP-SRCH-17 judges its empty page
    body = _page(amp, reply, "search with a Unicode query")
    amp.expect(
        body.get("query") == query,
        f"query is echoed verbatim: sent {shown(query)}, got {shown(body.get('query'))}",
        reply,
    )


@pytest.mark.smoke
@check("AMP-SRCH-17")
def test_no_matches_is_an_empty_page(amp: Amp01Context) -> None:
    """A search that matches nothing answers 200 with results [], returned 0 and has_more false."""
    reply = _unicode_search(amp)  # an owner without cells; AMP-SRCH-11 judges the query's echo
    body = _page(amp, reply, "search for an owner without cells")
    amp.expect(
        body["results"] == [] and body.get("returned") == 0 and body.get("has_more") is False,
        f"empty page (got returned {shown(body.get('returned'))}, has_more {shown(body.get('has_more'))})",
        reply,
    )


# ranking -----------------------------------------------------------------------------------------------


@pytest.mark.smoke
@check("AMP-SRCH-12")
def test_higher_decay_score_ranks_first_among_equal_texts(amp: Amp01Context) -> None:
    """Among cells with identical text, the higher decay score ranks first (importance, then confidence)."""
    shared, reply = _owner_set_complete(amp)
    scores = ", ".join(
        f"{m['body']['scoring']['importance']} x {m['body']['scoring']['confidence']}"
        for m in shared["cells"]
    )
    _expect_ids(
        amp,
        reply,
        ids_by_rank(shared),
        f"identical texts, decay_rate 0, importance x confidence {scores} (created in this order; "
        "the highest first)",
        ordered=True,
    )


@check("AMP-SRCH-13")
def test_relevance_outranks_freshness(amp: Amp01Context) -> None:
    """A clearly relevant cell outranks an unrelated one even when the unrelated one scores 1.0."""
    # the status trio's owner: its active cells are a relevant one scoring 0.5 and an unrelated one
    # scoring 1.0 (decay_rate 0), searched with a question about the relevant one when they were made
    made, replies = status_trio(amp)
    relevant, unrelated, reply = made["relevant"], made["kept"], replies[made["ranked"]]
    got = _ids(amp, reply)
    amp.expect(
        got[:1] == [relevant] and unrelated in got,
        f"the relevant cell {relevant} ranks above the unrelated {unrelated} (got {got})",
        reply,
    )


READ_GAP = 0.3
"""Seconds: the least time between the ranking check's creates and between the newer one and the read
(at RANKED_RATE the scores then differ by a factor of about 2)."""


@check("AMP-SRCH-14", serial=True)
def test_ranking_uses_the_current_score_with_the_read_reset(amp: Amp01Context) -> None:
    """A by-id read restarts a cell's decay clock, so a re-read twin outranks a fresher unread one.

    The cells are the ones the lifecycle checks' shared passes made when they ran already (the older
    with the first, the newer with the second: their clocks have been running since), else the check
    makes them, ``READ_GAP`` apart, and waits as long again before the read."""
    fast: dict[str, Any] = {"scoring": {"importance": 1.0, "confidence": 1.0, "decay_rate": RANKED_RATE}}
    early = ranked_cells(amp)
    if early is None:
        owner = amp.owner()
        older, older_sent = _cell(amp, owner, **fast), time.monotonic()
    else:
        owner, older, older_sent = early.owner, early.older, early.older_sent
    if early is None or early.newer is None or early.newer_made is None:
        time.sleep(max(0.0, older_sent + READ_GAP - time.monotonic()))
        newer, newer_made = _cell(amp, owner, **fast), time.monotonic()
    else:
        newer, newer_made = early.newer, early.newer_made
    time.sleep(max(0.0, newer_made + READ_GAP - time.monotonic()))  # usually nothing with early cells
    client = amp.as_agent("a")
    amp.expect_status(client.get(f"/memories/{older}"), 200, what="re-reading the older cell")
    _expect_ids(
        amp,
        _search(client, owner, include_stale=True),
        [older, newer],
        "the older, just re-read cell ranks above the newer unread one",
        ordered=True,
    )


@check("AMP-SRCH-18")
def test_search_is_not_an_access(amp: Amp01Context) -> None:
    """Searches do not change access_count or last_accessed_at; the first GET afterwards shows 1."""
    made, replies = unread_cell(amp)  # shared with AMP-READ-06, which judges the lists after them
    cell = made["cell"]["id"]
    for at in made["searches"]:
        reply = replies[at]
        found = [c for c in _page(amp, reply, "search")["results"] if c.get("id") == cell]
        amp.expect(found, "the search finds the cell", reply)
        scoring, lifecycle = found[0].get("scoring", {}), found[0].get("lifecycle", {})
        amp.expect(
            scoring.get("access_count") == 0 and lifecycle.get("last_accessed_at") is None,
            "a search result still shows access_count 0 and last_accessed_at null after searches "
            f"(got {shown(scoring.get('access_count'))}, {shown(lifecycle.get('last_accessed_at'))})",
            reply,
        )
    # the lists between the searches and the read are AMP-READ-06's question: one that counted blocks
    # this check's read (it could not tell which request counted), it does not fail it
    last = replies[made["lists"][-1]]
    listed = last.json() if last.status == 200 else None
    results = listed.get("results") if isinstance(listed, dict) else None
    entry = next((c for c in results or [] if isinstance(c, dict) and c.get("id") == cell), None)
    counted = entry.get("scoring", {}).get("access_count") if isinstance(entry, dict) else None
    if counted not in (0, None):
        amp.precondition_failed(
            f"the owner's list after the searches shows access_count {shown(counted)}, not 0",
            last,
            step="listing the owner's cells without counting a read",
            requirement="AMP-READ-06",
            expected="0",
        )
    reply = replies[made["read"]]
    amp.expect_status(reply, 200, what="reading the cell after two searches")
    count = reply.json_object().get("scoring", {}).get("access_count")
    amp.expect(
        count == 1, f"the first read after two searches shows access_count 1 (got {shown(count)})", reply
    )
