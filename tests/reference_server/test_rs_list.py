"""GET /memories and its alias /memories/query (AMP-LIST-*)."""

from __future__ import annotations

import pytest

PATHS = ("/memories", "/memories/query")


@pytest.mark.parametrize("path", PATHS)
def test_shape_defaults_and_filters(amp, path):
    owner = amp.owner()
    cells = {
        t: amp.create(amp.body(owner, f"{t} cell", type_=t)).json()
        for t in ("episodic", "semantic", "procedural")
    }
    amp.create(amp.body(amp.owner(), "other owner"))
    response = amp.list(path=path, owner_id=owner)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"results", "returned", "has_more", "offset", "limit"}
    assert body["returned"] == 3 and body["has_more"] is False and body["offset"] == 0 and body["limit"] == 20
    assert [c["id"] for c in body["results"]] == [
        cells[t]["id"] for t in ("episodic", "semantic", "procedural")
    ]
    assert amp.ids(amp.list(path=path, owner_id=owner, type="procedural")) == [cells["procedural"]["id"]]


def test_alias_answers_exactly_like_the_list(amp):
    owner = amp.owner()
    for n in range(5):
        amp.create(amp.body(owner, f"cell {n}"))
    for params in (
        {"owner_id": owner},
        {"owner_id": owner, "limit": 2, "offset": 1},
        {"limit": 101},
        {"type": "x"},
    ):
        first, second = amp.list(path="/memories", **params), amp.list(path="/memories/query", **params)
        assert (first.status_code, first.json()) == (second.status_code, second.json())


def test_default_status_is_active_and_status_filter(amp):
    owner = amp.owner()
    active = amp.create(amp.body(owner, "a")).json()
    archived = amp.create(amp.body(owner, "b")).json()
    stale = amp.create(amp.body(owner, "c")).json()
    amp.archive(archived["id"])
    amp.patch(stale["id"], {"lifecycle": {"status": "stale"}})
    assert amp.ids(amp.list(owner_id=owner)) == [active["id"]]
    assert amp.ids(amp.list(owner_id=owner, status="archived")) == [archived["id"]]
    assert amp.ids(amp.list(owner_id=owner, status="stale")) == [stale["id"]]
    amp.delete(archived["id"])
    assert amp.ids(amp.list(owner_id=owner, status="deleted")) == []


@pytest.mark.parametrize(
    ("params", "loc"),
    [
        ({"limit": 101}, "limit"),
        ({"limit": 0}, "limit"),
        ({"limit": -1}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "5.5"}, "limit"),
        ({"limit": "5_0"}, "limit"),
        ({"limit": " 5"}, "limit"),
        ({"limit": "1" * 40}, "limit"),
        ({"offset": -1}, "offset"),
        ({"offset": 2**53}, "offset"),
        ({"type": "literal"}, "type"),
        ({"status": "expired"}, "status"),
    ],
)
@pytest.mark.parametrize("path", PATHS)
def test_invalid_parameters_are_422(amp, params, loc, path):
    error = amp.error(amp.list(path=path, **params), 422, "VALIDATION_ERROR")
    assert any(entry["loc"] == ["query", loc] for entry in error["details"]["errors"]), error


def test_limit_bounds_echoed(amp):
    owner = amp.owner()
    assert amp.list(owner_id=owner, limit="7.0").json()["limit"] == 7
    assert amp.list(owner_id=owner, limit=100).json()["limit"] == 100
    assert amp.list(owner_id=owner, limit=1, offset=7).json()["offset"] == 7


def test_paging_counts_only_readable_cells(amp):
    owner = amp.owner()
    readable = []
    for n in range(9):
        policy = {"readable_by": ["agent-r"]} if n % 2 == 0 or n == 7 else {}
        cell = amp.create(amp.body(owner, f"cell {n}", access_policy=policy), "creator").json()
        if policy:
            readable.append(cell["id"])
    assert len(readable) == 6
    pages = []
    offset = 0
    while True:
        body = amp.list("agent-r", owner_id=owner, limit=2, offset=offset).json()
        pages.append([c["id"] for c in body["results"]])
        assert body["returned"] == len(body["results"])
        if not body["has_more"]:
            break
        offset += 2
    assert pages == [readable[0:2], readable[2:4], readable[4:6]]
    end = amp.list("agent-r", owner_id=owner, limit=2, offset=6).json()
    assert end["results"] == [] and end["has_more"] is False


def test_has_more_is_exact(amp):
    owner = amp.owner()
    for n in range(5):
        amp.create(amp.body(owner, f"cell {n}"))
    assert amp.list(owner_id=owner, limit=2, offset=2).json()["has_more"] is True
    last = amp.list(owner_id=owner, limit=2, offset=4).json()
    assert last["returned"] == 1 and last["has_more"] is False
    exact = amp.list(owner_id=owner, limit=5).json()
    assert exact["returned"] == 5 and exact["has_more"] is False


def test_without_owner_lists_every_readable_cell(amp):
    mine = [amp.create(amp.body(amp.owner(), "x"), "lister").json()["id"] for _ in range(3)]
    amp.create(amp.body(amp.owner(), "hidden"), "someone-else")
    assert amp.ids(amp.list("lister")) == mine


def test_list_without_agent_is_401(amp):
    for path in PATHS:
        amp.error(amp.list(None, path=path), 401, "MISSING_AGENT_ID")


def test_query_is_never_an_id(amp):
    amp.new_cell()
    assert amp.request("GET", "/memories/query", "agent-a").status_code == 200
    amp.error(amp.request("PATCH", "/memories/query", "agent-a", json={}), 405, "METHOD_NOT_ALLOWED")
    amp.error(amp.request("DELETE", "/memories/query", "agent-a"), 405, "METHOD_NOT_ALLOWED")
