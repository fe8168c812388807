"""POST /memories/search (AMP-SRCH-*)."""

from __future__ import annotations

import pytest


def _search(amp, owner, agent="agent-a", **fields):
    return amp.search({"query": fields.pop("query", "python backend"), "owner_id": owner, **fields}, agent)


def test_shape_and_echo(amp):
    owner = amp.owner()
    cell = amp.create(amp.body(owner, "User prefers Python for backend development")).json()
    response = _search(amp, owner, query="what does the user prefer? ☕")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"results", "returned", "has_more", "offset", "limit", "query"}
    assert body["results"] == [cell]
    assert (body["returned"], body["has_more"], body["offset"], body["limit"]) == (1, False, 0, 10)
    assert body["query"] == "what does the user prefer? ☕"


def test_no_match_is_an_empty_page(amp):
    body = _search(amp, amp.owner()).json()
    assert body["results"] == [] and body["returned"] == 0 and body["has_more"] is False


def test_owner_filter(amp):
    mine, theirs = amp.owner(), amp.owner()
    a = amp.create(amp.body(mine, "same text")).json()
    amp.create(amp.body(theirs, "same text"))
    assert amp.ids(_search(amp, mine, query="same text")) == [a["id"]]


def test_types_filter(amp):
    owner = amp.owner()
    cells = {
        t: amp.create(amp.body(owner, "same text", type_=t)).json()["id"]
        for t in ("episodic", "semantic", "procedural")
    }
    assert amp.ids(_search(amp, owner, types=["semantic"])) == [cells["semantic"]]
    assert set(amp.ids(_search(amp, owner, types=["semantic", "episodic"]))) == {
        cells["semantic"],
        cells["episodic"],
    }
    assert len(amp.ids(_search(amp, owner, types=None))) == 3
    amp.error(_search(amp, owner, types=["literal"]), 422, "VALIDATION_ERROR")


def test_status_filters(amp):
    owner = amp.owner()
    active = amp.create(amp.body(owner, "same text")).json()["id"]
    stale = amp.create(amp.body(owner, "same text", scoring={"importance": 0.2, "decay_rate": 0})).json()[
        "id"
    ]
    archived = amp.create(amp.body(owner, "same text")).json()["id"]
    amp.archive(archived)
    amp.run_pass()
    assert amp.status_of(stale) == "stale"
    assert amp.ids(_search(amp, owner)) == [active]
    assert set(amp.ids(_search(amp, owner, include_stale=True))) == {active, stale}
    assert amp.ids(_search(amp, owner, status=["stale"])) == [stale]
    assert set(amp.ids(_search(amp, owner, status=["archived"], include_stale=True))) == {archived, stale}
    assert amp.ids(_search(amp, owner, status=["archived"])) == [archived]
    assert amp.ids(_search(amp, owner, status=[])) == []


@pytest.mark.parametrize(
    ("fields", "loc"),
    [
        ({"limit": 101}, "limit"),
        ({"limit": 0}, "limit"),
        ({"limit": 2.5}, "limit"),
        ({"limit": True}, "limit"),
        ({"offset": 1e300}, "offset"),
        ({"offset": -1}, "offset"),
        ({"status": ["expired"]}, 0),
        ({"include_stale": "yes"}, "include_stale"),
        ({"query": 5}, "query"),
    ],
)
def test_invalid_search_is_422(amp, fields, loc):
    error = amp.error(_search(amp, amp.owner(), **fields), 422, "VALIDATION_ERROR")
    assert any(entry["loc"][-1] == loc for entry in error["details"]["errors"])


def test_query_and_owner_are_required(amp):
    error = amp.error(amp.search({"owner_id": "o"}), 422, "VALIDATION_ERROR")
    assert error["details"]["errors"][0]["loc"] == ["body", "query"]
    error = amp.error(amp.search({"query": "q"}), 422, "VALIDATION_ERROR")
    assert error["details"]["errors"][0]["loc"] == ["body", "owner_id"]


def test_limit_100_accepted_and_default_10(amp):
    owner = amp.owner()
    integral = _search(amp, owner, limit=5.0, offset=2.0).json()
    assert (integral["limit"], integral["offset"]) == (5, 2)
    assert _search(amp, owner, limit=100).json()["limit"] == 100
    for n in range(12):
        amp.create(amp.body(owner, f"text {n}"))
    body = _search(amp, owner).json()
    assert body["returned"] == 10 and body["has_more"] is True


def test_offset_counts_only_readable_results(amp):
    owner = amp.owner()
    mine = []
    for n, importance in enumerate((0.9, 0.85, 0.8, 0.75, 0.7, 0.65)):
        policy = {"readable_by": ["agent-r"]} if n % 2 == 0 else {}
        scoring = {"importance": importance, "decay_rate": 0}
        cell = amp.create(
            amp.body(owner, "identical text", scoring=scoring, access_policy=policy), "creator"
        ).json()
        if policy:
            mine.append(cell["id"])
    pages = [
        amp.ids(_search(amp, owner, "agent-r", query="identical text", limit=1, offset=k)) for k in range(3)
    ]
    assert pages == [[mine[0]], [mine[1]], [mine[2]]]
    end = _search(amp, owner, "agent-r", query="identical text", limit=1, offset=3).json()
    assert end["results"] == [] and end["has_more"] is False
    second = _search(amp, owner, "agent-r", query="identical text", limit=1, offset=1).json()
    assert second["has_more"] is True


def test_ranking_uses_the_decay_score_on_ties(amp):
    owner = amp.owner()
    low = amp.create(amp.body(owner, "same words here", scoring={"importance": 0.3, "decay_rate": 0})).json()[
        "id"
    ]
    high = amp.create(
        amp.body(owner, "same words here", scoring={"importance": 0.9, "decay_rate": 0})
    ).json()["id"]
    assert amp.ids(_search(amp, owner, query="same words here")) == [high, low]
    low_c = amp.create(amp.body(owner, "other words", scoring={"confidence": 0.4, "decay_rate": 0})).json()[
        "id"
    ]
    high_c = amp.create(amp.body(owner, "other words", scoring={"confidence": 0.9, "decay_rate": 0})).json()[
        "id"
    ]
    assert amp.ids(_search(amp, owner, query="other words", types=["semantic"]))[:2] == [high_c, low_c]


def test_equal_scores_keep_creation_order(amp):
    owner = amp.owner()
    ids = [amp.create(amp.body(owner, "twin", scoring={"decay_rate": 0})).json()["id"] for _ in range(5)]
    assert amp.ids(_search(amp, owner, query="twin")) == ids


def test_relevance_beats_freshness(amp):
    owner = amp.owner()
    amp.create(amp.body(owner, "The weather in Paris was sunny all week", scoring={"importance": 1.0}))
    relevant = amp.create(
        amp.body(owner, "User prefers Python for backend development", scoring={"importance": 0.5})
    ).json()["id"]
    assert amp.ids(_search(amp, owner, query="which language for backend development?"))[0] == relevant


def test_decay_part_uses_the_current_score_reset_by_reads(amp):
    owner = amp.owner()
    scoring = {"importance": 1, "confidence": 1, "decay_rate": 20000}
    first = amp.create(amp.body(owner, "decaying", scoring=scoring)).json()["id"]
    second = amp.create(amp.body(owner, "decaying", scoring=scoring)).json()["id"]
    assert amp.ids(_search(amp, owner, query="decaying")) == [first, second]
    amp.advance(seconds=10)
    amp.get(second)
    assert amp.ids(_search(amp, owner, query="decaying", include_stale=True)) == [second, first]


def test_search_applies_the_read_rule(amp):
    owner = amp.owner()
    public = amp.create(amp.body(owner, "shared fact", access_policy={"public": True}), "creator").json()[
        "id"
    ]
    private = amp.create(amp.body(owner, "shared fact"), "creator").json()["id"]
    listed = amp.create(
        amp.body(owner, "shared fact", access_policy={"readable_by": ["team-*"]}), "creator"
    ).json()["id"]
    writer = amp.create(
        amp.body(owner, "shared fact", access_policy={"writable_by": ["team-1"]}), "creator"
    ).json()["id"]
    assert set(amp.ids(_search(amp, owner, "team-1", query="shared fact"))) == {public, listed}
    assert set(amp.ids(_search(amp, owner, "creator", query="shared fact"))) == {
        public,
        private,
        listed,
        writer,
    }
    assert set(amp.ids(_search(amp, owner, owner, query="shared fact"))) == {public, private, listed, writer}


def test_search_without_agent_is_401(amp):
    amp.error(amp.search({"query": "q", "owner_id": "o"}, None), 401, "MISSING_AGENT_ID")


def test_wrong_methods_on_search(amp):
    for method in ("GET", "PATCH", "DELETE", "PUT"):
        response = amp.request(method, "/memories/search", "agent-a")
        amp.error(response, 405, "METHOD_NOT_ALLOWED")
        assert response.headers["allow"] == "POST"
