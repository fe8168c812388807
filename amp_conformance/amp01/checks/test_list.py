"""GET /memories and its alias GET /memories/query: shape, filters, paging, validation (AMP-LIST-*).

Every check lists one owner's cells (``owner_id`` filter), an owner only this run writes, so data from
other checks and other runs on a shared server never changes what a page should hold. The checks that
only read share the owners ``_shared_cells`` makes once per run: the owner set (five cells of which
agent "b" may read three, interleaved with two it may not) and the owner of one active, one archived
and one deleted cell (its lists sent with the cells, shared with the delete checks).
"""

from __future__ import annotations

from typing import Any

import pytest

from amp_conformance import SHOULD, Amp01Context, check
from amp_conformance.amp01.checks._shared_cells import (
    TRIO_LISTS,
    fresh_owner_list,
    invalid_list,
    minimal_cell,
    minimal_listed,
    owner_set,
    owner_set_page,
    status_trio,
)
from amp_conformance.amp01.checks._support import (
    expect_refused_as_invalid,
    expect_step,
    expect_valid_cell,
    shown,
)
from amp_conformance.amp01.conventions import answer_of, label
from amp_conformance.engine.client import Reply

PATHS = ("/memories", "/memories/query")
PAGE_MEMBERS = ("results", "returned", "has_more", "offset", "limit")
MAX_PAGES = 50


def _page(amp: Amp01Context, reply: Reply, what: str = "the list response") -> dict[str, Any]:
    """A 200 list page whose members have the right types (AMP-LIST-01); fails clearly otherwise."""
    amp.expect_status(reply, 200, what=what)
    body = reply.json_object()
    missing = [name for name in PAGE_MEMBERS if name not in body]
    amp.expect(not missing, f"{what} lacks {', '.join(missing)}", reply)
    amp.expect(isinstance(body["results"], list), f"{what}: results is an array", reply)
    for name in ("returned", "offset", "limit"):
        value = body[name]
        amp.expect(
            isinstance(value, int) and not isinstance(value, bool),
            f"{what}: {name} is an integer (got {shown(value)})",
            reply,
        )
    amp.expect(
        isinstance(body["has_more"], bool),
        f"{what}: has_more is a boolean (got {shown(body['has_more'])})",
        reply,
    )
    amp.expect(
        all(isinstance(item, dict) for item in body["results"]), f"{what}: every result is an object", reply
    )
    return body


def _ids(page: dict[str, Any]) -> list[Any]:
    return [item.get("id") for item in page["results"]]


def _list(amp: Amp01Context, role: str = "a", path: str = "/memories", **params: Any) -> Reply:
    return amp.as_agent(role).get(path, params=params)


def _invalid_list(amp: Amp01Context, **params: Any) -> Reply:
    """Agent "a"'s ``GET /memories`` of a fresh owner with ``params`` that must be refused, sent once
    per run (``_shared_cells.invalid_list``): the checks asking the same invalid parameter (its own
    rule, the alias answering like the list, the error table, the page-size claim) each judge this
    one answer."""
    return invalid_list(amp, **params)


def _owner_set_page(
    amp: Amp01Context, owner: str, *, role: str, limit: int, offset: int | None = None
) -> Reply:
    """``role``'s page of the owner set with ``limit`` (and ``offset``), sent once per run."""
    return owner_set_page(amp, owner, role=role, limit=limit, offset=offset)


def _fresh_owner_page(amp: Amp01Context) -> Reply:
    """Agent "a"'s list of a fresh owner (no cells) without limit or offset, sent once per run: the
    default limit and the default offset are each judged on this one answer (and, with keys,
    AMP-CAP-05's keyed list)."""
    return fresh_owner_list(amp)


@pytest.mark.smoke
@check("AMP-LIST-01")
def test_list_returns_a_page_of_valid_cells(amp: Amp01Context) -> None:
    """GET /memories answers 200 {results, returned, has_more, offset, limit} with valid cells."""
    made, reply = minimal_listed(amp)  # sent once per run; AMP-CELL-04 reads amp_version off it
    cell = made["cell"]
    page = _page(amp, reply)
    amp.expect(_ids(page) == [cell["id"]], f"the owner's one cell is listed (got {_ids(page)})", reply)
    for index, item in enumerate(page["results"]):
        expect_valid_cell(amp, item, reply, f"results[{index}]")


@pytest.mark.smoke
@check("AMP-LIST-02")
def test_query_alias_answers_like_the_list(amp: Amp01Context) -> None:
    """GET /memories/query takes the same parameters and returns the same page as GET /memories.

    One parameter set names every filter and the window at once (owner, type, limit, offset over the
    owner's three semantic cells): an alias ignoring any of them answers other ids or members. One
    bound and one enumeration must be refused alike on both paths."""
    owner = owner_set(amp)["owner"]
    params: dict[str, Any] = {"owner_id": owner, "type": "semantic", "limit": 2, "offset": 1}
    pages = []
    for path in PATHS:
        reply = _list(amp, path=path, **params)
        if path == "/memories/query":
            amp.expect(
                reply.status != 403, "/memories/query is never read as the memory id 'query' (got 403)", reply
            )
        pages.append(_page(amp, reply, f"GET {path} {params}"))
    for name in ("returned", "has_more", "offset", "limit"):
        amp.expect(
            pages[0][name] == pages[1][name],
            f"{name} agrees ({params}): /memories {shown(pages[0][name])}, "
            f"/memories/query {shown(pages[1][name])}",
        )
    amp.expect(
        _ids(pages[0]) == _ids(pages[1]),
        f"both paths list the same ids for {params}: {_ids(pages[0])} vs {_ids(pages[1])}",
    )
    invalid: list[dict[str, Any]] = [{"limit": amp.max_page_size + 1}, {"status": "expired"}]
    for params in invalid:
        replies = [
            _invalid_list(amp, **params)
            if path == "/memories"
            else _list(amp, path=path, owner_id=owner, **params)
            for path in PATHS
        ]
        answers = [answer_of(reply) for reply in replies]
        amp.expect(
            answers[0] == answers[1],
            f"both paths validate {params} alike: /memories answers {label(answers[0])}, "
            f"/memories/query {label(answers[1])}",
            replies[1],
        )


@check("AMP-LIST-03")
def test_owner_and_type_filters_are_exact(amp: Amp01Context) -> None:
    """owner_id matches identity.owner_id exactly and type returns only that memory type."""
    shared = owner_set(amp)
    owner = shared["owner"]
    by_type: dict[str, list[str]] = {}
    for made in shared["cells"]:
        by_type.setdefault(made["body"]["type"], []).append(made["cell"]["id"])
    mine = [cell_id for ids in by_type.values() for cell_id in ids]
    similar = shared["other"]["cell"]["id"]  # of an owner whose id has ours as a prefix
    reply = _owner_set_page(amp, owner, role="a", limit=100)  # AMP-LIST-05 judges it too (max 100)
    page = _page(amp, reply)
    amp.expect(
        sorted(_ids(page)) == sorted(mine),
        f"owner_id={owner} lists exactly its {len(mine)} cells (got {_ids(page)})",
        reply,
    )
    amp.expect(
        similar not in _ids(page),
        f"the cell of owner {shared['other_owner']} is not listed for owner_id={owner}",
        reply,
    )
    for kind, cell_ids in by_type.items():
        reply = _list(amp, owner_id=owner, type=kind)
        page = _page(amp, reply)
        amp.expect(
            sorted(_ids(page)) == sorted(cell_ids),
            f"type={kind} lists only the {len(cell_ids)} {kind} cell(s) {cell_ids} (got {_ids(page)})",
            reply,
        )


@pytest.mark.smoke
@check("AMP-LIST-03", "AMP-LIST-04", level=SHOULD, stance="C-12: the status filter is a SHOULD")
def test_status_filter_and_active_default(amp: Amp01Context) -> None:
    """Without status only active cells are listed; status=archived lists the archived one (C-12)."""
    # one owner's active, archived and deleted cells, listed right after they were made (shared with
    # the delete checks, which ask the same lists about the deleted one)
    made, replies = status_trio(amp)
    amp.archived_step(replies[made["archive archived"]])
    # the third cell must be gone (archived, then deleted) for the lists to hold just the other two
    amp.archived_step(replies[made["archive"]])
    deleted = replies[made["delete"]]
    if not 200 <= deleted.status < 300:  # a 200 deletes it too: that answer is AMP-DEL-01's question
        amp.deleted_step(deleted)
    active, archived = sorted((made["kept"], made["relevant"])), [made["archived"]]
    lists = {
        status: replies[at]
        for (path, status), at in zip(TRIO_LISTS, made["lists"], strict=True)
        if path == "/memories"
    }
    for status, expected, what in (
        (None, active, "the default list holds only the two active cells"),
        ("archived", archived, "status=archived lists only the archived cell"),
        ("active", active, "status=active lists only the two active cells"),
    ):
        reply = lists[status]
        page = _page(amp, reply)
        amp.expect(sorted(_ids(page)) == expected, f"{what} (got {_ids(page)})", reply)


@check("AMP-LIST-05", "AMP-ERR-04")
def test_limit_bounds_are_enforced_not_clamped(amp: Amp01Context) -> None:
    """limit above max_page_size, 0 or negative is 422; limit = max_page_size is accepted and echoed."""
    owner = amp.owner()
    maximum = amp.max_page_size
    reply = _invalid_list(amp, limit=maximum + 1)
    amp.expect(
        reply.status != 200,
        f"limit={maximum + 1} was accepted (200), not refused: clamped instead of a 422",
        reply,
        requirement="AMP-LIST-05",
    )
    error = expect_refused_as_invalid(amp, details=True, reply=reply)
    entries = error.get("details", {}).get("errors", [])
    amp.expect(
        any("limit" in entry.get("loc", []) for entry in entries if isinstance(entry, dict)),
        "no entry of details.errors has 'limit' in its loc",
        reply,
        requirement="AMP-ERR-04",
    )
    # limit=0 is the run's shared invalid list (the error table asks it too)
    expect_refused_as_invalid(amp, details=True, reply=_invalid_list(amp, limit=0))
    for bad in (-1, "ten"):
        expect_refused_as_invalid(amp, details=True, reply=_list(amp, owner_id=owner, limit=bad))
    # the owner set's page of limit=max_page_size (AMP-LIST-03's whole-owner list when that is 100)
    reply = _owner_set_page(amp, owner_set(amp)["owner"], role="a", limit=maximum)
    page = _page(amp, reply)
    amp.expect(page["limit"] == maximum, f"limit={maximum} is echoed (got {shown(page['limit'])})", reply)


@pytest.mark.smoke
@check("AMP-LIST-05", level=SHOULD, stance="Level line: SHOULD for the default 20")
def test_limit_defaults_to_20(amp: Amp01Context) -> None:
    """Without limit the page uses (and echoes) limit 20."""
    reply = _fresh_owner_page(amp)  # AMP-LIST-06 judges its default offset
    page = _page(amp, reply)
    amp.expect(
        page["limit"] == 20, f"the default limit is 20 (got {shown(page['limit'])})", reply, expected="20"
    )


@pytest.mark.smoke
@check("AMP-LIST-06")
def test_offset_must_not_be_negative(amp: Amp01Context) -> None:
    """offset -1 (or not an integer) is 422 VALIDATION_ERROR; without offset, offset 0 is echoed."""
    owner = amp.owner()
    for bad in (-1, "first"):
        expect_refused_as_invalid(amp, details=True, reply=_list(amp, owner_id=owner, offset=bad))
    reply = _fresh_owner_page(amp)  # AMP-LIST-05 judges its default limit
    page = _page(amp, reply)
    amp.expect(page["offset"] == 0, f"the default offset 0 is echoed (got {shown(page['offset'])})", reply)


@check("AMP-LIST-07", "AMP-ACL-14")
def test_pages_hold_only_readable_cells_and_count_them(amp: Amp01Context) -> None:
    """Only readable cells are listed and limit counts them: 3 readable of 5, limit 2 -> 2, 1."""
    shared = owner_set(amp)
    owner, visible, invisible = shared["owner"], set(shared["readable"]), set(shared["hidden"])
    seen: list[Any] = []
    for offset, expected in ((0, 2), (2, 1)):
        reply = _owner_set_page(amp, owner, role="b", limit=2, offset=offset)  # AMP-LIST-08, -09 too
        page = _page(amp, reply)
        leaked = [cell_id for cell_id in _ids(page) if cell_id in invisible]
        # listing only readable cells is the read rule (AMP-ACL-14, restated by AMP-LIST-07)
        amp.expect(
            not leaked,
            f"the page lists {len(leaked)} cell(s) the caller may not read: {shown(leaked)}",
            reply,
            requirement="AMP-ACL-14",
        )
        amp.expect(
            len(page["results"]) == expected,
            f"offset={offset}, limit=2 holds {len(page['results'])} readable cells, not {expected}",
            reply,
            expected=str(expected),
            requirement="AMP-LIST-07",
        )
        seen += _ids(page)
    amp.expect(
        set(seen) == visible,
        f"the pages hold {len(set(seen) & visible)} of the {len(visible)} readable cells",
        requirement="AMP-LIST-07",
    )


@pytest.mark.smoke
@check("AMP-LIST-08")
def test_paging_members_tell_the_truth(amp: Amp01Context) -> None:
    """returned = len(results) <= limit, has_more exactly when a next page holds something, window echoed."""
    shared = owner_set(amp)
    owner, invisible = shared["owner"], set(shared["hidden"])
    readable = len(shared["readable"])
    reply = _list(amp, "b", owner_id=owner)
    page = _page(amp, reply)
    # the counts below presume the list shows b only what b may read (AMP-ACL-14)
    leaked = [cell_id for cell_id in _ids(page) if cell_id in invisible]
    expect_step(
        amp,
        not leaked,
        f"the list shows the caller {len(leaked)} cell(s) it may not read",
        reply,
        step="a list showing the caller only its readable cells",
        requirement="AMP-ACL-14",
    )
    amp.expect(
        page["offset"] == 0, f"without offset, offset 0 is echoed (got {shown(page['offset'])})", reply
    )
    amp.expect(
        isinstance(page["limit"], int) and page["limit"] >= readable and page["has_more"] is False,
        f"without limit, the default window (limit {shown(page['limit'])}, has_more "
        f"{shown(page['has_more'])}) does not hold all {readable} cells",
        reply,
    )
    cases = (  # offset, limit, returned, has_more: over 3 readable cells
        (0, 2, 2, True),
        (1, 1, 1, True),
        (1, 2, 2, False),
        (2, 2, 1, False),
        (3, 2, 0, False),
        (0, 3, 3, False),
    )
    for offset, limit, returned, has_more in cases:
        reply = _owner_set_page(amp, owner, role="b", limit=limit, offset=offset)
        page = _page(amp, reply)
        where = f"offset={offset}, limit={limit} over {readable} readable cells"
        amp.expect(
            page["returned"] == len(page["results"]),
            f"{where}: returned {page['returned']} equals the {len(page['results'])} results",
            reply,
        )
        amp.expect(
            page["returned"] <= limit, f"{where}: returned {shown(page['returned'])} exceeds the limit", reply
        )
        amp.expect(
            page["returned"] == returned,
            f"{where}: returned is {shown(page['returned'])}, not {returned}",
            reply,
        )
        amp.expect(
            page["has_more"] is has_more,
            f"{where}: has_more is {shown(page['has_more'])}, not {shown(has_more)}",
            reply,
        )
        amp.expect(
            (page["offset"], page["limit"]) == (offset, limit),
            f"{where}: offset and limit are echoed as {shown(page['offset'])} and {shown(page['limit'])}",
            reply,
        )


@check("AMP-LIST-09")
def test_pages_partition_the_readable_cells(amp: Amp01Context) -> None:
    """Walking every page with limit 2 yields each readable cell exactly once."""
    shared = owner_set(amp)
    owner, visible = shared["owner"], set(shared["readable"])
    seen: list[Any] = []
    offset = 0
    for _ in range(MAX_PAGES):
        reply = _owner_set_page(amp, owner, role="b", limit=2, offset=offset)  # AMP-LIST-07's pages
        page = _page(amp, reply)
        seen += _ids(page)
        if not page["has_more"] or not page["results"]:
            break
        offset += len(page["results"])
    duplicates = sorted({cell_id for cell_id in seen if seen.count(cell_id) > 1})
    amp.expect(not duplicates, f"consecutive pages do not overlap (listed twice: {duplicates})")
    amp.expect(
        set(seen) == visible,
        f"the pages together hold the {len(visible)} readable cells (got {len(set(seen))})",
    )


@pytest.mark.smoke
@check("AMP-LIST-10", "AMP-ERR-04")
def test_invalid_type_or_status_is_a_validation_error(amp: Amp01Context) -> None:
    """type=literal and status=expired are 422 VALIDATION_ERROR."""
    owner = amp.owner()
    expect_refused_as_invalid(amp, details=True, reply=_list(amp, owner_id=owner, type="literal"))
    expect_refused_as_invalid(amp, details=True, reply=_invalid_list(amp, status="expired"))


@check("AMP-LIST-12")
def test_without_owner_id_every_owners_readable_cells_are_listed(amp: Amp01Context) -> None:
    """Omitting owner_id lists the caller's readable cells of every owner."""
    mine = {minimal_cell(amp)["cell"]["id"], owner_set(amp)["cells"][0]["cell"]["id"]}  # two owners
    found: set[str] = set()
    offset = 0
    limit = amp.max_page_size
    for _ in range(MAX_PAGES):
        page = _page(amp, _list(amp, limit=limit, offset=offset))
        found |= mine.intersection(_ids(page))
        if found == mine or not page["has_more"] or not page["results"]:
            break
        offset += len(page["results"])
    amp.expect(found == mine, f"both owners' cells are listed without owner_id (found {len(found)} of 2)")
