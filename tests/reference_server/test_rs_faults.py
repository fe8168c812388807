"""Every fault changes at least one observable response (AMP_REFERENCE_FAULTS).

Each scenario runs against two fresh servers, one with the fault off and one with it on, and returns
an observation built only from responses (no ids, which differ between servers). The observations
must differ. A fault without a scenario fails ``test_every_fault_has_a_scenario``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

import pytest

from reference_server import FAULTS, Settings
from reference_server.amp01.auth import hash_key

Scenario = Callable[[Any], Any]
SCENARIOS: dict[str, tuple[Scenario, dict[str, Any]]] = {}
KEYS = {"api_keys": {"agent-one": hash_key("key-one"), "agent-two": hash_key("key-two")}}
ONE = {"X-AMP-Agent-ID": "agent-one", "X-AMP-API-Key": "key-one"}
ULID_ID = re.compile(r"(mem_)?[0-7][0-9A-HJKMNP-TV-Z]{25}")


def scenario(name: str, **settings: Any) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        assert name not in SCENARIOS, name
        SCENARIOS[name] = (fn, settings)
        return fn

    return register


def _exhaust(amp, cell_id, count=5):
    for n in range(count):
        assert amp.patch(cell_id, {"scoring": {"importance": 0.1 + n / 100}}).status_code == 200


# --- read ---------------------------------------------------------------------------------------


@scenario("get-no-access-count")
def _(amp):
    cell = amp.new_cell()
    return amp.get(cell["id"]).json()["scoring"]["access_count"]


@scenario("get-no-last-accessed")
def _(amp):
    cell = amp.new_cell()
    return amp.get(cell["id"]).json()["lifecycle"]["last_accessed_at"]


@scenario("unknown-id-500")
def _(amp):
    return amp.get("mem_01J5A3B7K9M2N4P6Q8R0S1T3V5").status_code


# --- patch --------------------------------------------------------------------------------------


@scenario("patch-replaces-subobject")
def _(amp):
    cell = amp.new_cell(scoring={"importance": 0.8, "confidence": 0.95})
    return amp.patch(cell["id"], {"scoring": {"importance": 0.9}}).json()["scoring"]


@scenario("patch-mutable-created-at")
def _(amp):
    cell = amp.new_cell()
    body = {"lifecycle": {"created_at": "2020-01-01T00:00:00Z"}}
    return amp.patch(cell["id"], body).json()["lifecycle"]["created_at"]


@scenario("patch-mutable-owner")
def _(amp):
    cell = amp.new_cell()
    return amp.patch(cell["id"], {"identity": {"owner_id": "evil"}}).json()["identity"]["owner_id"]


@scenario("archived-can-reactivate")
def _(amp):
    cell = amp.new_cell()
    amp.archive(cell["id"])
    return amp.patch(cell["id"], {"lifecycle": {"status": "active"}}).status_code


@scenario("archive-status-only-refused")
def _(amp):
    cell = amp.new_cell()
    return amp.patch(cell["id"], {"lifecycle": {"status": "archived"}}).status_code


@scenario("patch-deleted-status-allowed")
def _(amp):
    cell = amp.new_cell()
    return amp.patch(cell["id"], {"lifecycle": {"status": "deleted"}}).status_code


@scenario("scoring-patch-flips-status")
def _(amp):
    cell = amp.new_cell(scoring={"importance": 0.2, "decay_rate": 0})
    amp.run_pass()
    return amp.patch(cell["id"], {"scoring": {"importance": 0.9}}).json()["lifecycle"]["status"]


# --- delete -------------------------------------------------------------------------------------


@scenario("delete-active-allowed")
def _(amp):
    return amp.delete(amp.new_cell()["id"]).status_code


@scenario("delete-returns-200-body")
def _(amp):
    cell = amp.new_cell()
    amp.archive(cell["id"])
    response = amp.delete(cell["id"])
    return response.status_code, len(response.content)


@scenario("deleted-read-wrong-status")
def _(amp):
    cell = amp.new_cell()
    amp.delete_cell(cell["id"])
    return amp.get(cell["id"]).json()["lifecycle"]["status"]


@scenario("deleted-in-list")
def _(amp):
    owner = amp.owner()
    cell = amp.create(amp.body(owner, "gone")).json()
    amp.delete_cell(cell["id"])
    listed = amp.list(owner_id=owner, status="deleted").json()["returned"]
    found = amp.search({"query": "gone", "owner_id": owner, "status": ["deleted"]}).json()["returned"]
    return listed, found


# --- errors and identity ------------------------------------------------------------------------


@scenario("error-envelope-framework")
def _(amp):
    return sorted(amp.create({}).json())


@scenario("hostile-payloads")
def _(amp):
    reply = amp.create({})
    return (
        reply.headers["content-type"].split(";")[0],
        "<script>" in reply.text,
        "X-AMP-Debug" in reply.headers,
    )


@scenario("transition-wrong-code")
def _(amp):
    return amp.delete(amp.new_cell()["id"]).json()["error"]["code"]


@scenario("missing-agent-id-accepted")
def _(amp):
    return amp.list(None).status_code


# --- create and the cell ------------------------------------------------------------------------


@scenario("create-wrong-defaults")
def _(amp):
    return amp.new_cell()["scoring"]["importance"]


@scenario("create-honours-client-lifecycle")
def _(amp):
    body = amp.body(amp.owner(), lifecycle={"status": "archived", "created_at": "2000-01-01T00:00:00Z"})
    return amp.create(body).json()["lifecycle"]


@scenario("create-returns-200")
def _(amp):
    return amp.create(amp.body(amp.owner())).status_code


@scenario("id-not-ulid")
def _(amp):
    return bool(ULID_ID.fullmatch(amp.new_cell()["id"]))


@scenario("timestamps-local-offset")
def _(amp):
    return amp.new_cell()["lifecycle"]["created_at"]


# --- list ---------------------------------------------------------------------------------------


@scenario("limit-clamped")
def _(amp):
    list_status = amp.list(limit=101).status_code
    search_status = amp.search({"query": "q", "owner_id": "o", "limit": 101}).status_code
    return list_status, search_status


@scenario("has-more-always-false")
def _(amp):
    owner = amp.owner()
    for n in range(3):
        amp.create(amp.body(owner, f"cell {n}"))
    return amp.list(owner_id=owner, limit=1).json()["has_more"]


@scenario("query-alias-missing")
def _(amp):
    return amp.list(path="/memories/query").status_code


@scenario("list-ignores-acl")
def _(amp):
    owner = amp.owner()
    amp.create(amp.body(owner, "private"), "creator")
    return amp.list("stranger", owner_id=owner).json()["returned"]


# --- capabilities -------------------------------------------------------------------------------


@scenario("health-version-mismatch")
def _(amp):
    return amp.request("GET", "/health").json()["amp_version"]


@scenario("retention-days-low")
def _(amp):
    return amp.request("GET", "/spec").json()["capabilities"]["retention_days"]


@scenario("spec-size-overstated")
def _(amp):
    return amp.request("GET", "/spec").json()["capabilities"]["max_cell_size_bytes"]


# --- access control -----------------------------------------------------------------------------


@scenario("search-ignores-readable-by")
def _(amp):
    owner = amp.owner()
    amp.create(amp.body(owner, "secret"), "creator")
    return amp.search({"query": "secret", "owner_id": owner}, "stranger").json()["returned"]


@scenario("wildcard-substring")
def _(amp):
    cell = amp.new_cell(agent="creator", access_policy={"readable_by": ["agent-team-*"]})
    return amp.get(cell["id"], "x-agent-team-1").status_code


@scenario("public-grants-write")
def _(amp):
    cell = amp.new_cell(agent="creator", access_policy={"public": True})
    return amp.patch(cell["id"], {"content": {"text": "defaced"}}, "stranger").status_code


@scenario("no-creator-bypass")
def _(amp):
    cell = amp.new_cell(agent="creator")
    return amp.get(cell["id"], "creator").status_code


@scenario("no-owner-bypass")
def _(amp):
    owner = amp.owner()
    cell = amp.create(amp.body(owner, "owned"), "creator").json()
    return amp.get(cell["id"], owner).status_code


# --- API keys -----------------------------------------------------------------------------------


@scenario("keys-body-created-by", **KEYS)
def _(amp):
    body = amp.body(amp.owner(), created_by="agent-one")
    return amp.request("POST", "/memories", json=body).status_code


@scenario("keys-distinct-errors", **KEYS)
def _(amp):
    unknown = amp.request(
        "GET", "/memories", headers={"X-AMP-Agent-ID": "nobody", "X-AMP-API-Key": "key-one"}
    )
    wrong = amp.request("GET", "/memories", headers={"X-AMP-Agent-ID": "agent-one", "X-AMP-API-Key": "nope"})
    return unknown.json() == wrong.json()


@scenario("keys-spec-closed", **KEYS)
def _(amp):
    return amp.request("GET", "/spec").status_code


# --- admin --------------------------------------------------------------------------------------


@scenario("admin-open-when-disabled", admin_token=None)
def _(amp):
    return amp.request("POST", "/lifecycle/run").status_code


@scenario("admin-token-ignored")
def _(amp):
    return amp.request("POST", "/lifecycle/run", headers={"X-AMP-Admin-Token": "wrong"}).status_code


@scenario("admin-missing-transition-keys")
def _(amp):
    return sorted(amp.run_pass()["transitions"])


# --- size ---------------------------------------------------------------------------------------


@scenario("size-not-enforced", max_cell_size_bytes=2048)
def _(amp):
    return amp.create(amp.body(amp.owner(), "x" * 3000)).status_code


@scenario("size-patch-not-enforced", max_cell_size_bytes=2048)
def _(amp):
    cell = amp.new_cell()
    return amp.patch(cell["id"], {"content": {"text": "x" * 3000}}).status_code


@scenario("size-writes-before-refusing", max_cell_size_bytes=2048)
def _(amp):
    owner = amp.owner()
    status = amp.create(amp.body(owner, "x" * 3000)).status_code
    return status, amp.list(owner_id=owner).json()["returned"]


# --- rate limit ---------------------------------------------------------------------------------


@scenario("rate-limit-off")
def _(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"])
    return amp.patch(cell["id"], {"scoring": {"importance": 0.5}}).status_code


@scenario("rate-counts-refused")
def _(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"])
    amp.advance(seconds=1800)
    amp.patch(cell["id"], {"scoring": {"importance": 0.5}})  # refused
    amp.advance(seconds=1800)
    return [amp.patch(cell["id"], {"scoring": {"importance": n / 10}}).status_code for n in range(5)]


@scenario("rate-never-forgets")
def _(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"])
    amp.advance(seconds=3601)
    return amp.patch(cell["id"], {"scoring": {"importance": 0.5}}).status_code


@scenario("rate-limit-global")
def _(amp):
    first, second = amp.new_cell(), amp.new_cell()
    _exhaust(amp, first["id"])
    return amp.patch(second["id"], {"scoring": {"importance": 0.5}}).status_code


@scenario("rate-before-access")
def _(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"])
    return amp.patch(cell["id"], {"scoring": {"importance": 0.5}}, "stranger").status_code


@scenario("rate-counts-non-scoring")
def _(amp):
    cell = amp.new_cell()
    for n in range(5):
        amp.patch(cell["id"], {"content": {"text": f"edit {n}"}})
    return amp.patch(cell["id"], {"scoring": {"importance": 0.5}}).status_code


@scenario("retry-after-mismatch")
def _(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"])
    response = amp.patch(cell["id"], {"scoring": {"importance": 0.5}})
    return response.headers["retry-after"] == str(response.json()["error"]["details"]["retry_after_seconds"])


# --- lifecycle ----------------------------------------------------------------------------------


@scenario("threshold-inclusive")
def _(amp):
    cell = amp.new_cell(scoring={"importance": 0.3, "decay_rate": 0})
    amp.run_pass()
    return amp.status_of(cell["id"])


@scenario("lifecycle-never-recovers")
def _(amp):
    cell = amp.new_cell(scoring={"importance": 0.2, "decay_rate": 0})
    amp.run_pass()
    amp.patch(cell["id"], {"scoring": {"importance": 0.9}})
    return amp.run_pass()["transitions"]["stale_to_active"]


@scenario("read-does-not-reset-clock")
def _(amp):
    cell = amp.new_cell(scoring={"importance": 1, "decay_rate": 20000})
    amp.advance(seconds=10)
    amp.run_pass()
    amp.get(cell["id"])
    amp.advance(seconds=4)
    amp.run_pass()
    owner = cell["identity"]["owner_id"]
    return amp.list(owner_id=owner, status="active").json()["returned"]


@scenario("decay-in-hours")
def _(amp):
    # 0.1/day for 2 h: 0.98 by days, exp(-0.2) = 0.82 by hours; rate 1.0/day: 0.92 by days, 0.14 by hours
    slow = amp.new_cell(scoring={"importance": 1, "decay_rate": 0.1})
    steady = amp.new_cell(scoring={"importance": 1, "decay_rate": 1.0})
    amp.advance(hours=2)
    amp.run_pass()
    return amp.status_of(slow["id"]), amp.status_of(steady["id"])


@scenario("decay-whole-days")
def _(amp):
    # rate 10/day for 12 h: exp(-5) by fractional days, stale; whole days: 0 days, still 1.0
    fast = amp.new_cell(scoring={"importance": 1, "decay_rate": 10})
    amp.advance(hours=12)
    amp.run_pass()
    return amp.status_of(fast["id"])


@scenario("pass-touches-archived")
def _(amp):
    cell = amp.new_cell(scoring={"importance": 1, "decay_rate": 0})
    amp.archive(cell["id"])
    amp.run_pass()
    return amp.status_of(cell["id"])


# --- search -------------------------------------------------------------------------------------


@scenario("stale-in-default-search")
def _(amp):
    owner = amp.owner()
    amp.create(amp.body(owner, "faded", scoring={"importance": 0.1, "decay_rate": 0}))
    amp.run_pass()
    return amp.search({"query": "faded", "owner_id": owner}).json()["returned"]


@scenario("search-approximate-index")
def _(amp):
    owner = amp.owner()
    for _ in range(5):
        amp.create(amp.body(owner, "same"))
    return amp.search({"query": "same", "owner_id": owner}).json()["returned"]


@scenario("search-index-drops-beyond-n")
def _(amp):
    owner = amp.owner()
    for number in range(101):  # one past the index's 100 cells of an owner
        amp.create(amp.body(owner, f"cell {number}"))
    return amp.search({"query": "cell", "owner_id": owner, "limit": 100, "offset": 100}).json()["returned"]


@scenario("search-ignores-types")
def _(amp):
    owner = amp.owner()
    for kind in ("episodic", "semantic", "procedural"):
        amp.create(amp.body(owner, "same", type_=kind))
    return amp.search({"query": "same", "owner_id": owner, "types": ["semantic"]}).json()["returned"]


@scenario("search-ignores-owner")
def _(amp):
    mine, theirs = amp.owner(), amp.owner()
    amp.create(amp.body(mine, "same"))
    amp.create(amp.body(theirs, "same"))
    return amp.search({"query": "same", "owner_id": mine}).json()["returned"]


@scenario("search-offset-before-acl")
def _(amp):
    owner = amp.owner()
    for n, importance in enumerate((0.9, 0.85, 0.8, 0.75, 0.7, 0.65)):
        policy = {"readable_by": ["agent-r"]} if n % 2 == 0 else {}
        scoring = {"importance": importance, "decay_rate": 0}
        amp.create(amp.body(owner, "identical", scoring=scoring, access_policy=policy), "creator")
    body = {"query": "identical", "owner_id": owner, "limit": 1, "offset": 2}
    return [cell["scoring"]["importance"] for cell in amp.search(body, "agent-r").json()["results"]]


@scenario("ranking-ignores-decay")
def _(amp):
    owner = amp.owner()
    for importance in (0.3, 0.9):
        amp.create(amp.body(owner, "twins", scoring={"importance": importance, "decay_rate": 0}))
    results = amp.search({"query": "twins", "owner_id": owner}).json()["results"]
    return [cell["scoring"]["importance"] for cell in results]


# --- fuzzing-only -------------------------------------------------------------------------------


@scenario("nonascii-session-500")
def _(amp):
    body = amp.body(amp.owner())
    body["identity"]["session_id"] = "sessión-1"
    return amp.create(body).status_code


@scenario("huge-integer-500")
def _(amp):
    body = amp.body(amp.owner())
    body["content"]["metadata"] = {"n": 2**60}
    return amp.create(body).status_code


@scenario("deep-metadata-500")
def _(amp):
    body = amp.body(amp.owner())
    body["content"]["metadata"] = {"a": {"b": {"c": {"d": 1}}}}
    return amp.create(body).status_code


# --- issue 22: refusals, identities, values as sent, countdowns ---------------------------------


@scenario("refused-422-applies-valid-members")
def _(amp):
    cell = amp.new_cell()
    status = amp.patch(cell["id"], {"content": {"text": "new"}, "scoring": {"importance": 2}}).status_code
    return status, amp.stored(cell["id"])["content"]["text"]


@scenario("refused-409-applies-other-members")
def _(amp):
    cell = amp.new_cell()
    amp.archive(cell["id"])
    body = {"content": {"text": "new"}, "lifecycle": {"status": "active"}}
    status = amp.patch(cell["id"], body).status_code
    return status, amp.stored(cell["id"])["content"]["text"]


@scenario("text-normalised")
def _(amp):
    return amp.new_cell(text="\ufb01ne cafe\u0301")["content"]["text"]


@scenario("values-coerced")
def _(amp):
    bodies = ({"scoring": {"importance": "0.5"}}, {"access_policy": {"public": "true"}})
    return [amp.create(amp.body(amp.owner(), **body)).status_code for body in bodies]


@scenario("media-type-parameter-refused")
def _(amp):
    return _raw(amp, _create_bytes(amp), "application/json; charset=utf-8")


@scenario("owner-filter-folded")
def _(amp):
    owner = amp.owner() + "-caf\u00e9"
    amp.create(amp.body(owner, "accented owner"))
    variant = owner.upper()
    listed = amp.list(owner_id=variant).json()["returned"]
    decomposed = unicodedata.normalize("NFD", owner)
    found = amp.search({"query": "accented owner", "owner_id": decomposed})
    return listed, found.json()["returned"]


@scenario("identity-case-folded")
def _(amp):
    cell = amp.new_cell(agent="creator")
    return amp.get(cell["id"], "Creator").status_code


@scenario("policy-edit-drops-creator")
def _(amp):
    cell = amp.new_cell(agent="creator")
    policy = {"access_policy": {"readable_by": ["someone"], "writable_by": ["someone"]}}
    assert amp.patch(cell["id"], policy, "creator").status_code == 200
    return amp.get(cell["id"], "creator").status_code, amp.patch(cell["id"], {}, "creator").status_code


@scenario("admin-token-prefix")
def _(amp):
    prefix = amp.ADMIN_TOKEN[:-1]
    return amp.request("POST", "/lifecycle/run", headers={"X-AMP-Admin-Token": prefix}).status_code


@scenario("retry-after-fixed")
def _(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"])
    first = amp.patch(cell["id"], {"scoring": {"importance": 0.5}}).headers["retry-after"]
    amp.advance(seconds=10)
    return first, amp.patch(cell["id"], {"scoring": {"importance": 0.5}}).headers["retry-after"]


@scenario("scalar-body-500")
def _(amp):
    return [_raw(amp, body) for body in (b"42", b"true", b"null")]


@scenario("forbidden-patch-writes")
def _(amp):
    cell = amp.new_cell(agent="creator")
    status = amp.patch(cell["id"], {"content": {"text": "defaced"}}, "stranger").status_code
    return status, amp.stored(cell["id"])["content"]["text"]


# --- the tests ----------------------------------------------------------------------------------


def test_every_fault_has_a_scenario():
    assert set(SCENARIOS) == set(FAULTS), sorted(set(FAULTS) ^ set(SCENARIOS))


def test_fault_registry_is_well_formed():
    catalogue_id = re.compile(r"AMP-[A-Z]+-\d{2}")
    assert len(FAULTS) >= 30
    for name, fault in FAULTS.items():
        assert fault.name == name
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name)
        assert catalogue_id.fullmatch(fault.requirement)
        assert fault.description


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_changes_an_observable_response(make_amp, name):
    run, settings = SCENARIOS[name]
    off = run(make_amp(**settings))
    on = run(make_amp(faults=frozenset({name}), **settings))
    assert off != on, f"{name}: the same observation with the fault on and off: {off!r}"


@pytest.mark.parametrize(
    "name", ["nonascii-session-500", "huge-integer-500", "deep-metadata-500", "unknown-id-500"]
)
def test_deliberate_500s_are_plain_text(make_amp, name):
    run, settings = SCENARIOS[name]
    amp = make_amp(faults=frozenset({name}), **settings)
    assert run(amp) == 500


def test_faults_are_off_unless_named():
    assert Settings().faults == frozenset()
    assert Settings.from_env({}).faults == frozenset()
    assert Settings.from_env({"AMP_REFERENCE_FAULTS": " limit-clamped , rate-limit-off ,"}).faults == {
        "limit-clamped",
        "rate-limit-off",
    }


# --- added with the capability and search families ----------------------------------------------


@scenario("spec-rate-overstated")
def _(amp):
    return amp.client.get("/amp/v1/spec").json()["capabilities"]["scoring_patch_limit"]["max_patches"]


@scenario("manual-run-endpoint-wrong")
def _(amp):
    endpoint = amp.client.get("/amp/v1/spec").json()["capabilities"]["lifecycle_scheduler"][
        "manual_run_endpoint"
    ]
    return amp.client.post(endpoint).status_code


@scenario("rate-429-applies-content")
def _(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"])
    refused = amp.patch(cell["id"], {"scoring": {"importance": 0.5}, "content": {"text": "changed"}})
    assert refused.status_code == 429
    return amp.get(cell["id"]).json()["content"]["text"]


@scenario("include-stale-ignored")
def _(amp):
    owner = amp.owner()
    amp.create(amp.body(owner, "faded", scoring={"importance": 0.1, "decay_rate": 0}))
    amp.run_pass()
    return amp.search({"query": "faded", "owner_id": owner, "include_stale": True}).json()["returned"]


# --- the byte level (bodies that are not well-formed JSON requests) ------------------------------


def _raw(amp, body, content_type="application/json", method="POST", path="/memories"):
    """Send raw bytes; the observation is the status and the media type of the answer."""
    headers = {"Content-Type": content_type} if content_type is not None else {}
    response = amp.request(method, path, "agent-a", content=body, headers=headers)
    return response.status_code, response.headers.get("content-type", "").split(";")[0]


def _create_bytes(amp, slot=b'"bytes"'):
    owner = amp.owner().encode()
    return b'{"type":"semantic","content":{"text":"x","metadata":{"n":%s}},' % slot + (
        b'"identity":{"owner_id":"%s","owner_type":"user"}}' % owner
    )


@scenario("bytes-non-utf8-500")
def _(amp):
    return _raw(amp, _create_bytes(amp, b'"caf\xe9"'))


@scenario("bytes-bom-500")
def _(amp):
    return _raw(amp, b"\xef\xbb\xbf" + _create_bytes(amp))


@scenario("bytes-truncated-html")
def _(amp):
    whole = _create_bytes(amp)
    return _raw(amp, whole[: whole.index(b'"x"') + 2])


@scenario("bytes-duplicate-keys-500")
def _(amp):
    return _raw(amp, _create_bytes(amp, b'1,"n":2'))


@scenario("bytes-huge-number-500")
def _(amp):
    return [_raw(amp, _create_bytes(amp, number)) for number in (b"1e400", b"9" * 400)]


@scenario("bytes-lone-surrogate-500")
def _(amp):
    return [_raw(amp, _create_bytes(amp, slot)) for slot in (b'"\\ud800"', b'"a\\udc00b"', b'"\xed\xa0\x80"')]


@scenario("bytes-deep-nesting-500")
def _(amp):
    return _raw(amp, _create_bytes(amp, b"[" * 10_000 + b"]" * 10_000))


@scenario("bytes-content-type-framework")
def _(amp):
    return _raw(amp, _create_bytes(amp), "text/plain")


@scenario("bytes-missing-content-type-500")
def _(amp):
    return _raw(amp, _create_bytes(amp), None)


@scenario("bytes-empty-body-500")
def _(amp):
    return _raw(amp, b"")


@scenario("bytes-get-body-500")
def _(amp):
    cell = amp.new_cell()
    return _raw(amp, b'{"owner_id": "someone"}', method="GET", path=f"/memories/{cell['id']}")
