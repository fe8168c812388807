"""The v1.2-draft tier (amp.update, amp.batch_encode, metadata_filters): optional, never a v1.1 verdict.

These checks run at level MAY, so a draft shortfall is reported as a warning and can never fail a
v1.1 run; they skip when the server does not list the draft verb. MCP only: the stored OpenAPI
file documents no REST route for the draft verbs.
"""

from __future__ import annotations

from typing import Any

from amp_conformance.amp11.channels import MCP
from amp_conformance.amp11.checks._support import annotations_of
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.engine.catalogue import MAY
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown

#: Why these checks run below their rows' MUST: the tier is v1.2-draft, never part of a v1.1 verdict.
DRAFT_STANCE = "draft tier: v1.2-draft additions are optional and never part of a v1.1 verdict"
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def _need(amp: Amp11Context, verb: str) -> dict[str, Any]:
    amp.require(MCP)
    tools = amp.session.tools(amp.evidence.exchanges)
    if verb not in tools:
        amp.skip(f"{verb} (v1.2-draft) is not listed")
    return tools[verb]


def _annotations(amp: Amp11Context, verb: str, wanted: tuple[bool, ...]) -> None:
    annotations = annotations_of(_need(amp, verb))
    for hint, value in zip(HINTS, wanted, strict=True):
        amp.expect(
            annotations.get(hint) is value, f"{verb} {hint} is {shown(annotations.get(hint))}", amp.latest
        )


@check("AMP11-DRAFT-01", level=MAY, stance=DRAFT_STANCE)
def test_update_annotations(amp: Amp11Context) -> None:
    """amp.update, when listed: idempotent, not destructive."""
    _annotations(amp, "amp.update", (False, False, True, False))


@check("AMP11-DRAFT-02", level=MAY, stance=DRAFT_STANCE)
def test_update_changes_content_and_merges_metadata(amp: Amp11Context) -> None:
    """amp.update replaces content and merges metadata (RFC 7396: null deletes a key)."""
    _need(amp, "amp.update")
    scope = amp.scope()
    token = amp.token()
    memory_id = amp.encode(scope, f"before {token}", on=MCP, metadata={"keep": 1, "drop": 2})
    patch = {
        "scope": scope,
        "id": memory_id,
        "content": f"after {token}",
        "metadata": {"drop": None, "new": 3},
    }
    value = amp.ok("amp.update", patch, on=MCP)
    amp.expect(value.get("status") == "updated", f"update answered {value}", value)
    found = amp.find(scope, memory_id, token, on=MCP)
    amp.expect(
        found is not None and found.get("content") == f"after {token}",
        "the new content is not recalled",
        found,
    )
    assert found is not None
    # metadata admits backend keys of the server's own (additionalProperties: true): judge the keys sent
    merged = found.get("metadata")
    merged = merged if isinstance(merged, dict) else {}
    sent = {key: merged.get(key, "(absent)") for key in ("keep", "drop", "new") if key in merged}
    amp.expect(
        sent == {"keep": 1, "new": 3}, f"the keys sent merged to {sent} (whole metadata {merged})", found
    )


@check("AMP11-DRAFT-03", level=MAY, stance=DRAFT_STANCE)
def test_update_unknown_foreign_or_empty(amp: Amp11Context) -> None:
    """amp.update of an unknown or foreign id is not_found; empty content is invalid_request."""
    _need(amp, "amp.update")
    owner = amp.scope("owner")
    memory_id = amp.encode(owner, f"owned {amp.token()}", on=MCP)
    for scope, target in ((owner, "amp11-never-issued"), (amp.scope("intruder"), memory_id)):
        result = amp.call("amp.update", {"scope": scope, "id": target, "content": "x"}, on=MCP)
        status = (result.value or {}).get("status") or result.error_code
        amp.expect(status == "not_found", f"update of {target} from {scope} answered {shown(status)}", result)
    result = amp.call("amp.update", {"scope": owner, "id": memory_id, "content": ""}, on=MCP)
    amp.expect_error(result, "invalid_request", "update with empty content")


@check("AMP11-DRAFT-04", level=MAY, stance=DRAFT_STANCE)
def test_batch_encode_annotations(amp: Amp11Context) -> None:
    """amp.batch_encode, when listed: no hint set."""
    _annotations(amp, "amp.batch_encode", (False, False, False, False))


@check("AMP11-DRAFT-05", level=MAY, stance=DRAFT_STANCE)
def test_batch_encode_rows_in_order_with_partial_failure(amp: Amp11Context) -> None:
    """amp.batch_encode answers one result per entry, in order; a bad entry fails alone."""
    _need(amp, "amp.batch_encode")
    scope = amp.scope()
    token = amp.token()
    # the pinned amp.json names the list `memories`; a good row's status is from its per-row enum, the
    # bad slot's `invalid_request` is the draft prose's (§3.2.5), which amp.json's enum does not list
    memories = [
        {"content": f"batch zero {token}", "force": True},
        {"content": ""},
        {"content": f"batch two {token}", "force": True},
    ]
    value = amp.ok("amp.batch_encode", {"scope": scope, "memories": memories}, on=MCP)
    results = value.get("results")
    amp.expect(isinstance(results, list) and len(results) == 3, f"batch results {results}", value)
    assert isinstance(results, list)
    statuses = [r.get("status") if isinstance(r, dict) else None for r in results]
    amp.expect(statuses[0] == statuses[2] == "stored", f"batch statuses {statuses}: the good rows", value)
    amp.expect(statuses[1] == "invalid_request", f"batch statuses {statuses}: the empty entry", value)
    for item in results:
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            amp.session.remember(MCP, {"scope": scope, "id": item["id"]})
    recalled = {r.get("content"): r.get("id") for r in amp.recall(scope, token, on=MCP)}
    amp.expect(
        recalled.get(f"batch zero {token}") == results[0].get("id"), "results[0] is not entry 0", amp.latest
    )


def _seed_tags(amp: Amp11Context, scope: dict[str, str], token: str) -> dict[str, str]:
    rows = {"low": {"tag": "alpha", "amp.confidence": 0.2}, "high": {"tag": "alpha", "amp.confidence": 0.9}}
    rows["other"] = {"tag": "beta", "amp.confidence": 0.95}
    return {name: amp.encode(scope, f"{name} {token}", on=MCP, metadata=md) for name, md in rows.items()}


@check("AMP11-DRAFT-06", level=MAY, stance=DRAFT_STANCE)
def test_metadata_filters_compose_with_and(amp: Amp11Context) -> None:
    """metadata_filters compose with strict AND; a missing key is a miss."""
    amp.require(MCP)
    scope = amp.scope()
    token = amp.token()
    ids = _seed_tags(amp, scope, token)
    filters = [
        {"key": "tag", "operator": "eq", "value": "alpha"},
        {"key": "amp.confidence", "operator": "gte", "value": 0.5},
    ]
    result = amp.call(
        "amp.recall", {"scope": scope, "query": token, "filters": {"metadata_filters": filters}}, on=MCP
    )
    if not result.ok:
        amp.skip(f"metadata_filters (v1.2-draft) not supported: {result.describe()}")
    found = {r.get("id") for r in (result.value or {}).get("results") or [] if isinstance(r, dict)}
    amp.expect(found == {ids["high"]}, f"eq alpha AND gte 0.5 returned {sorted(map(str, found))}", result)
    missing = [{"key": "absent", "operator": "ne", "value": "x"}]
    result = amp.call(
        "amp.recall", {"scope": scope, "query": token, "filters": {"metadata_filters": missing}}, on=MCP
    )
    found = {r.get("id") for r in (result.value or {}).get("results") or [] if isinstance(r, dict)}
    amp.expect(not found, "a filter on a missing key matched rows", result)


@check("AMP11-DRAFT-07", level=MAY, stance=DRAFT_STANCE)
def test_malformed_metadata_filters_are_refused(amp: Amp11Context) -> None:
    """An unknown operator, in with a scalar, or a missing value is refused with invalid_request."""
    amp.require(MCP)
    scope = amp.scope()
    for bad in (
        {"key": "tag", "operator": "regex", "value": "^a"},
        {"key": "tag", "operator": "in", "value": "alpha"},
        {"key": "tag", "operator": "eq"},
    ):
        arguments = {"scope": scope, "query": "x", "filters": {"metadata_filters": [bad]}}
        amp.expect_error(amp.call("amp.recall", arguments, on=MCP), "invalid_request", f"filter {bad}")
