"""Scopes (§2.3): isolating keys, strict AND matching, and no leak through any verb."""

from __future__ import annotations

from typing import Any

from amp_conformance.amp11.channels import REST, ROUTE_SCOPE_KEYS
from amp_conformance.amp11.context import Amp11
from amp_conformance.engine.marking import check


def _every_verb(scope_part: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("amp.encode", {**scope_part, "content": "scope probe", "force": True}),
        ("amp.recall", {**scope_part, "query": "scope probe"}),
        ("amp.forget", {**scope_part, "id": "amp11-no-such-id"}),
        ("amp.stats", {**scope_part}),
        ("amp.consolidate", {**scope_part, "depth": "light"}),
        ("amp.pin", {**scope_part, "id": "amp11-no-such-id"}),
        ("amp.export", {**scope_part}),
        ("amp.import", {**scope_part, "ndjson": ""}),
    ]


def _carriable(verb: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The probe with only the scope keys the pinned OpenAPI lists for the verb's REST route (a
    refining-only scope stays refining-only); unchanged when none of its keys is listed."""
    scope = arguments.get("scope")
    listed = ROUTE_SCOPE_KEYS.get(verb)
    if not isinstance(scope, dict) or listed is None:
        return arguments
    kept = {key: value for key, value in scope.items() if key in listed}
    return {**arguments, "scope": kept} if kept else arguments


def _expect_refused(amp11: Amp11, scope_part: dict[str, Any], what: str) -> None:
    for channel in amp11.channels:
        for verb, arguments in _every_verb(scope_part):
            if channel == REST:
                arguments = _carriable(verb, arguments)
            result = amp11.try_call(verb, arguments, on=channel)
            if result is None or amp11.full_verb_refused(result):
                continue  # a Core server may refuse the Full verbs before looking at the scope
            amp11.expect_error(result, "invalid_request", f"{verb} with {what}")


@check("AMP11-SCOPE-01")
def test_refining_keys_alone_are_refused(amp11: Amp11) -> None:
    """A scope of session_id / app_id / org_id only is refused with invalid_request on every verb."""
    scope = {"session_id": amp11.session.unique("s"), "app_id": "amp11-app", "org_id": "amp11-org"}
    _expect_refused(amp11, {"scope": scope}, "a scope of refining keys only")


@check("AMP11-SCOPE-02")
def test_a_request_without_scope_is_refused(amp11: Amp11) -> None:
    """A request with neither scope nor agent_id is refused with invalid_request."""
    _expect_refused(amp11, {}, "no scope and no agent_id")


@check("AMP11-SCOPE-03")
def test_each_isolating_key_alone_is_a_scope(amp11: Amp11) -> None:
    """agent_id, group_id, workspace_id and user_id each make a valid scope on their own."""
    for channel in amp11.channels:
        for key in ("agent_id", "group_id", "workspace_id", "user_id"):
            scope = {key: amp11.session.unique(key)}
            token = amp11.token()
            memory_id = amp11.encode(scope, f"isolating key {key} {token}", on=channel)
            found = amp11.find(scope, memory_id, token, on=channel)
            amp11.expect(found is not None, f"over {channel}: a memory stored under {scope} is not recalled")


@check("AMP11-SCOPE-04")
def test_recall_is_strict_and(amp11: Amp11) -> None:
    """A query naming a different value, or a key the memory lacks, never sees the memory."""
    for channel in amp11.channels:
        agent, user = amp11.session.unique("agent"), amp11.session.unique("user")
        stored = {"agent_id": agent, "user_id": user}
        token = amp11.token()
        memory_id = amp11.encode(stored, f"strict and {token}", on=channel)
        amp11.expect(
            amp11.find(stored, memory_id, token, on=channel) is not None,
            f"over {channel}: the memory is not recalled under its own scope",
        )
        others = [
            {"agent_id": agent, "user_id": amp11.session.unique("other-user")},
            {"agent_id": amp11.session.unique("other-agent"), "user_id": user},
            {"agent_id": agent, "user_id": user, "workspace_id": amp11.session.unique("ws")},
        ]
        for query_scope in others:
            leaked = amp11.find(query_scope, memory_id, token, on=channel)
            amp11.expect(
                leaked is None,
                f"over {channel}: a memory stored under {stored} was returned to {query_scope}",
            )


@check("AMP11-SCOPE-05")
def test_refining_keys_narrow(amp11: Amp11) -> None:
    """A memory under {agent A, session S1} is not returned to {agent A, session S2}."""
    for channel in amp11.channels:
        agent = amp11.session.unique("agent")
        first = {"agent_id": agent, "session_id": amp11.session.unique("s1")}
        second = {"agent_id": agent, "session_id": amp11.session.unique("s2")}
        token = amp11.token()
        memory_id = amp11.encode(first, f"refining {token}", on=channel)
        leaked = amp11.find(second, memory_id, token, on=channel)
        amp11.expect(leaked is None, f"over {channel}: a memory of session S1 was returned to session S2")


@check("AMP11-SCOPE-06")
def test_broader_queries(amp11: Amp11) -> None:
    """Reports whether a broader query sees memories stored under a narrower scope (hierarchical reads)."""
    for channel in amp11.channels:
        agent = amp11.session.unique("agent")
        narrow = {"agent_id": agent, "user_id": amp11.session.unique("user")}
        token = amp11.token()
        memory_id = amp11.encode(narrow, f"hierarchy {token}", on=channel)
        seen = amp11.find({"agent_id": agent}, memory_id, token, on=channel) is not None
        amp11.note(
            f"over {channel}: a query by agent_id alone {'sees' if seen else 'does not see'} "
            "memories stored under {agent_id, user_id} (conflict C9)"
        )


def _not_found(result: Any) -> bool:
    return (result.value or {}).get("status") == "not_found" or result.error_code == "not_found"


def _owner_and_intruders(amp11: Amp11) -> tuple[dict[str, str], list[dict[str, str]]]:
    """An owner scope {agent, user} and scopes that must not reach its memories: a stranger, a
    sibling (same agent, other user) and a narrower one (an extra key the memory lacks: strict AND)."""
    agent, user = amp11.session.unique("agent"), amp11.session.unique("user")
    owner = {"agent_id": agent, "user_id": user}
    intruders = [
        amp11.scope("stranger"),
        {"agent_id": agent, "user_id": amp11.session.unique("sibling")},
        {**owner, "workspace_id": amp11.session.unique("ws")},
    ]
    return owner, intruders


@check("AMP11-SCOPE-07")
def test_forget_from_another_scope_changes_nothing(amp11: Amp11) -> None:
    """amp.forget from another scope (stranger, sibling, narrower) answers not_found; the memory survives."""
    for channel in amp11.channels:
        owner, intruders = _owner_and_intruders(amp11)
        token = amp11.token()
        memory_id = amp11.encode(owner, f"cross forget {token}", on=channel)
        for intruder in intruders:
            result = amp11.call("amp.forget", {"scope": intruder, "id": memory_id}, on=channel)
            amp11.expect(_not_found(result), f"forget from {intruder}: {result.describe()}", result)
            survived = amp11.find(owner, memory_id, token, on=channel)
            amp11.expect(survived is not None, f"over {channel}: forget from {intruder} deleted the memory")


@check("AMP11-SCOPE-08")
def test_pin_from_another_scope_changes_nothing(amp11: Amp11) -> None:
    """amp.pin from another scope (stranger, sibling, narrower) answers not_found; the memory stays active."""
    amp11.need_verb("amp.pin")
    for channel in amp11.channels:
        owner, intruders = _owner_and_intruders(amp11)
        token = amp11.token()
        memory_id = amp11.encode(owner, f"cross pin {token}", on=channel)
        for intruder in intruders:
            result = amp11.call("amp.pin", {"scope": intruder, "id": memory_id}, on=channel)
            amp11.full_verb_answer(result)
            amp11.expect(_not_found(result), f"pin from {intruder}: {result.describe()}", result)
            found = amp11.find(owner, memory_id, token, on=channel)
            amp11.expect(found is not None, f"over {channel}: the memory is gone after a foreign pin")
            assert found is not None
            status = found.get("status")
            amp11.expect(status == "active", f"over {channel}: a pin from {intruder} made it {status!r}")


@check("AMP11-SCOPE-09")
def test_stats_counts_only_its_scope(amp11: Amp11) -> None:
    """amp.stats of one scope does not move when another scope (a stranger, a sibling) is written."""
    for channel in amp11.channels:
        mine, others = _owner_and_intruders(amp11)
        others = others[:2]  # a narrower scope's rows may count in a broader one (conflict C9)
        amp11.encode(mine, f"stats mine {amp11.token()}", on=channel)
        before = amp11.count(mine, on=channel)
        amp11.expect(before == 1, f"over {channel}: a scope holding one memory counts {before}")
        for other in others:
            amp11.encode(other, f"stats other {amp11.token()}", on=channel)
            after = amp11.count(mine, on=channel)
            amp11.expect(
                after == before, f"over {channel}: memory_count moved to {after} after a write to {other}"
            )


@check("AMP11-SCOPE-10")
def test_export_emits_only_its_scope(amp11: Amp11) -> None:
    """amp.export of a scope emits no row of another scope (sibling sessions included)."""
    amp11.need_verb("amp.export")
    for channel in amp11.channels:
        agent = amp11.session.unique("agent")
        mine = {"agent_id": agent, "session_id": amp11.session.unique("s1")}
        sibling = {"agent_id": agent, "session_id": amp11.session.unique("s2")}
        stranger = amp11.scope("stranger")
        own_id = amp11.encode(mine, f"export mine {amp11.token()}", on=channel)
        foreign = {
            amp11.encode(sibling, f"export sibling {amp11.token()}", on=channel),
            amp11.encode(stranger, f"export stranger {amp11.token()}", on=channel),
        }
        rows, _ = amp11.export_rows({"scope": mine}, on=channel)
        ids = {row.get("id") for row in rows if isinstance(row, dict)}
        amp11.expect(own_id in ids, f"over {channel}: export misses the scope's own memory")
        leaked = sorted(str(i) for i in ids & foreign)
        amp11.expect(not leaked, f"over {channel}: export of {mine} emitted rows of other scopes: {leaked}")


@check("AMP11-SCOPE-11")
def test_results_carry_the_stored_scope(amp11: Amp11) -> None:
    """A recalled memory's scope carries exactly the keys and values it was stored under."""
    for channel in amp11.channels:
        scope = {
            "agent_id": amp11.session.unique("agent"),
            "user_id": amp11.session.unique("user"),
            "workspace_id": amp11.session.unique("ws"),
            "session_id": amp11.session.unique("session"),
        }
        token = amp11.token()
        memory_id = amp11.encode(scope, f"scope echo {token}", on=channel)
        found = amp11.find(scope, memory_id, token, on=channel)
        amp11.expect(found is not None, f"over {channel}: the memory is not recalled under its scope")
        assert found is not None
        amp11.expect(
            found.get("scope") == scope, f"over {channel}: recalled scope {found.get('scope')} != {scope}"
        )


@check("AMP11-SCOPE-12")
def test_malformed_scopes_are_refused(amp11: Amp11) -> None:
    """A scope with an unknown key or a non-string value is refused with invalid_request."""
    agent = amp11.session.unique("agent")
    bad_scopes: list[tuple[str, dict[str, Any]]] = [
        ("an unknown key", {"agent_id": agent, "team_colour": "red"}),
        ("an object value", {"agent_id": agent, "user_id": {"id": "u"}}),
        ("a list value", {"agent_id": [agent]}),
        ("a number value", {"agent_id": agent, "user_id": 42}),
    ]
    for channel in amp11.channels:
        for what, scope in bad_scopes:
            arguments = {"scope": scope, "content": "malformed scope", "force": True}
            result = amp11.call("amp.encode", arguments, on=channel)
            amp11.expect_error(result, "invalid_request", f"amp.encode with {what} in scope")


@check("AMP11-SCOPE-13")
def test_a_new_scope_is_empty_not_an_error(amp11: Amp11) -> None:
    """A never-written scope answers an empty recall and memory_count 0."""
    for channel in amp11.channels:
        scope = amp11.scope("fresh")
        amp11.blocked_if_scope_form_refused(
            amp11.call("amp.recall", {"scope": scope, "query": "x"}, on=channel)
        )
        results = amp11.recall(scope, "anything at all", on=channel)
        amp11.expect(results == [], f"over {channel}: a fresh scope recalls {len(results)} memories")
        count = amp11.count(scope, on=channel)
        amp11.expect(count == 0, f"over {channel}: a fresh scope counts {count}")


@check("AMP11-SCOPE-14")
def test_consolidate_leaves_other_scopes_alone(amp11: Amp11) -> None:
    """amp.consolidate of one scope leaves another scope's memories unchanged."""
    amp11.need_verb("amp.consolidate")
    for channel in amp11.channels:
        agent = amp11.session.unique("agent")
        target = {"agent_id": agent, "session_id": amp11.session.unique("s1")}
        bystander = {"agent_id": agent, "session_id": amp11.session.unique("s2")}
        token = amp11.token()
        text = f"duplicate bystander memory {token}"
        ids = [amp11.encode(bystander, text, on=channel) for _ in range(2)]
        amp11.encode(target, f"duplicate target memory {token}", on=channel)
        amp11.encode(target, f"duplicate target memory {token}", on=channel)
        amp11.ok("amp.consolidate", {"scope": target, "depth": "full"}, on=channel)
        after = {r.get("id"): r.get("status") for r in amp11.recall(bystander, token, on=channel)}
        for memory_id in ids:
            amp11.expect(
                after.get(memory_id) == "active",
                f"over {channel}: consolidating another scope changed a bystander memory "
                f"(status now {after.get(memory_id)!r})",
            )
