"""Scopes (§2.3): isolating keys, strict AND matching, and no leak through any verb."""

from __future__ import annotations

from typing import Any

from amp_conformance.amp11.channels import REST, ROUTE_SCOPE_KEYS
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown


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


def _expect_refused(amp: Amp11Context, scope_part: dict[str, Any], what: str) -> None:
    for channel in amp.channels:
        for verb, arguments in _every_verb(scope_part):
            if channel == REST:
                arguments = _carriable(verb, arguments)
            result = amp.try_call(verb, arguments, on=channel)
            if result is None or amp.full_verb_refused(result):
                continue  # a Core server may refuse the Full verbs before looking at the scope
            amp.expect_error(result, "invalid_request", f"{verb} with {what}")


@check("AMP11-SCOPE-01")
def test_refining_keys_alone_are_refused(amp: Amp11Context) -> None:
    """A scope of session_id / app_id / org_id only is refused with invalid_request on every verb."""
    scope = {"session_id": amp.session.unique("s"), "app_id": "amp11-app", "org_id": "amp11-org"}
    _expect_refused(amp, {"scope": scope}, "a scope of refining keys only")


@check("AMP11-SCOPE-02")
def test_a_request_without_scope_is_refused(amp: Amp11Context) -> None:
    """A request with neither scope nor agent_id is refused with invalid_request."""
    _expect_refused(amp, {}, "no scope and no agent_id")


@check("AMP11-SCOPE-03")
def test_each_isolating_key_alone_is_a_scope(amp: Amp11Context) -> None:
    """agent_id, group_id, workspace_id and user_id each make a valid scope on their own."""
    for channel in amp.channels:
        for key in ("agent_id", "group_id", "workspace_id", "user_id"):
            scope = {key: amp.session.unique(key)}
            token = amp.token()
            memory_id = amp.encode(scope, f"isolating key {key} {token}", on=channel)
            found = amp.find(scope, memory_id, token, on=channel)
            amp.expect(
                found is not None, f"over {channel}: a memory stored under {scope} is not recalled", found
            )


@check("AMP11-SCOPE-04")
def test_recall_is_strict_and(amp: Amp11Context) -> None:
    """A query naming a different value, or a key the memory lacks, never sees the memory."""
    for channel in amp.channels:
        agent, user = amp.session.unique("agent"), amp.session.unique("user")
        stored = {"agent_id": agent, "user_id": user}
        token = amp.token()
        memory_id = amp.encode(stored, f"strict and {token}", on=channel)
        amp.expect(
            amp.find(stored, memory_id, token, on=channel) is not None,
            f"over {channel}: the memory is not recalled under its own scope",
            amp.latest,
        )
        others = [
            {"agent_id": agent, "user_id": amp.session.unique("other-user")},
            {"agent_id": amp.session.unique("other-agent"), "user_id": user},
            {"agent_id": agent, "user_id": user, "workspace_id": amp.session.unique("ws")},
        ]
        for query_scope in others:
            leaked = amp.find(query_scope, memory_id, token, on=channel)
            amp.expect(
                leaked is None,
                f"over {channel}: a memory stored under {stored} was returned to {query_scope}",
                amp.latest,
            )


@check("AMP11-SCOPE-05")
def test_refining_keys_narrow(amp: Amp11Context) -> None:
    """A memory under {agent A, session S1} is not returned to {agent A, session S2}."""
    for channel in amp.channels:
        agent = amp.session.unique("agent")
        first = {"agent_id": agent, "session_id": amp.session.unique("s1")}
        second = {"agent_id": agent, "session_id": amp.session.unique("s2")}
        token = amp.token()
        memory_id = amp.encode(first, f"refining {token}", on=channel)
        leaked = amp.find(second, memory_id, token, on=channel)
        amp.expect(
            leaked is None, f"over {channel}: a memory of session S1 was returned to session S2", amp.latest
        )


@check("AMP11-SCOPE-06")
def test_broader_queries(amp: Amp11Context) -> None:
    """Reports whether a broader query sees memories stored under a narrower scope (hierarchical reads)."""
    for channel in amp.channels:
        agent = amp.session.unique("agent")
        narrow = {"agent_id": agent, "user_id": amp.session.unique("user")}
        token = amp.token()
        memory_id = amp.encode(narrow, f"hierarchy {token}", on=channel)
        seen = amp.find({"agent_id": agent}, memory_id, token, on=channel) is not None
        amp.note(
            f"over {channel}: a query by agent_id alone {'sees' if seen else 'does not see'} "
            "memories stored under {agent_id, user_id} (conflict C9)"
        )


def _not_found(result: Any) -> bool:
    return (result.value or {}).get("status") == "not_found" or result.error_code == "not_found"


def _owner_and_intruders(amp: Amp11Context) -> tuple[dict[str, str], list[dict[str, str]]]:
    """An owner scope {agent, user} and scopes that must not reach its memories: a stranger, a
    sibling (same agent, other user) and a narrower one (an extra key the memory lacks: strict AND)."""
    agent, user = amp.session.unique("agent"), amp.session.unique("user")
    owner = {"agent_id": agent, "user_id": user}
    intruders = [
        amp.scope("stranger"),
        {"agent_id": agent, "user_id": amp.session.unique("sibling")},
        {**owner, "workspace_id": amp.session.unique("ws")},
    ]
    return owner, intruders


@check("AMP11-SCOPE-07")
def test_forget_from_another_scope_changes_nothing(amp: Amp11Context) -> None:
    """amp.forget from another scope (stranger, sibling, narrower) answers not_found; the memory survives."""
    for channel in amp.channels:
        owner, intruders = _owner_and_intruders(amp)
        token = amp.token()
        memory_id = amp.encode(owner, f"cross forget {token}", on=channel)
        for intruder in intruders:
            result = amp.call("amp.forget", {"scope": intruder, "id": memory_id}, on=channel)
            amp.expect(_not_found(result), f"forget from {intruder}: {result.describe()}", result)
            survived = amp.find(owner, memory_id, token, on=channel)
            amp.expect(
                survived is not None, f"over {channel}: forget from {intruder} deleted the memory", survived
            )


@check("AMP11-SCOPE-08")
def test_pin_from_another_scope_changes_nothing(amp: Amp11Context) -> None:
    """amp.pin from another scope (stranger, sibling, narrower) answers not_found; the memory stays active."""
    amp.need_verb("amp.pin")
    for channel in amp.channels:
        owner, intruders = _owner_and_intruders(amp)
        token = amp.token()
        memory_id = amp.encode(owner, f"cross pin {token}", on=channel)
        for intruder in intruders:
            result = amp.call("amp.pin", {"scope": intruder, "id": memory_id}, on=channel)
            amp.full_verb_answer(result)
            amp.expect(_not_found(result), f"pin from {intruder}: {result.describe()}", result)
            found = amp.find(owner, memory_id, token, on=channel)
            amp.expect(found is not None, f"over {channel}: the memory is gone after a foreign pin", found)
            assert found is not None
            status = found.get("status")
            amp.expect(
                status == "active", f"over {channel}: a pin from {intruder} made it {shown(status)}", found
            )


@check("AMP11-SCOPE-09")
def test_stats_counts_only_its_scope(amp: Amp11Context) -> None:
    """amp.stats of one scope does not move when another scope (a stranger, a sibling) is written."""
    for channel in amp.channels:
        mine, others = _owner_and_intruders(amp)
        others = others[:2]  # a narrower scope's rows may count in a broader one (conflict C9)
        amp.encode(mine, f"stats mine {amp.token()}", on=channel)
        before = amp.count(mine, on=channel)
        amp.expect(before == 1, f"over {channel}: a scope holding one memory counts {before}", amp.latest)
        for other in others:
            amp.encode(other, f"stats other {amp.token()}", on=channel)
            after = amp.count(mine, on=channel)
            amp.expect(
                after == before,
                f"over {channel}: memory_count moved to {after} after a write to {other}",
                amp.latest,
            )


@check("AMP11-SCOPE-10")
def test_export_emits_only_its_scope(amp: Amp11Context) -> None:
    """amp.export of a scope emits no row of another scope (sibling sessions included)."""
    amp.need_verb("amp.export")
    for channel in amp.channels:
        agent = amp.session.unique("agent")
        mine = {"agent_id": agent, "session_id": amp.session.unique("s1")}
        sibling = {"agent_id": agent, "session_id": amp.session.unique("s2")}
        stranger = amp.scope("stranger")
        own_id = amp.encode(mine, f"export mine {amp.token()}", on=channel)
        foreign = {
            amp.encode(sibling, f"export sibling {amp.token()}", on=channel),
            amp.encode(stranger, f"export stranger {amp.token()}", on=channel),
        }
        rows, _ = amp.export_rows({"scope": mine}, on=channel)
        ids = {row.get("id") for row in rows if isinstance(row, dict)}
        amp.expect(own_id in ids, f"over {channel}: export misses the scope's own memory", _)
        leaked = sorted(str(i) for i in ids & foreign)
        amp.expect(
            not leaked, f"over {channel}: export of {mine} emitted rows of other scopes: {leaked}", rows
        )


@check("AMP11-SCOPE-11")
def test_results_carry_the_stored_scope(amp: Amp11Context) -> None:
    """A recalled memory's scope carries exactly the keys and values it was stored under."""
    for channel in amp.channels:
        scope = {
            "agent_id": amp.session.unique("agent"),
            "user_id": amp.session.unique("user"),
            "workspace_id": amp.session.unique("ws"),
            "session_id": amp.session.unique("session"),
        }
        token = amp.token()
        memory_id = amp.encode(scope, f"scope echo {token}", on=channel)
        found = amp.find(scope, memory_id, token, on=channel)
        amp.expect(found is not None, f"over {channel}: the memory is not recalled under its scope", found)
        assert found is not None
        amp.expect(
            found.get("scope") == scope,
            f"over {channel}: recalled scope {found.get('scope')} != {scope}",
            found,
        )


@check("AMP11-SCOPE-12")
def test_malformed_scopes_are_refused(amp: Amp11Context) -> None:
    """A scope with an unknown key or a non-string value is refused with invalid_request."""
    agent = amp.session.unique("agent")
    bad_scopes: list[tuple[str, dict[str, Any]]] = [
        ("an unknown key", {"agent_id": agent, "team_colour": "red"}),
        ("an object value", {"agent_id": agent, "user_id": {"id": "u"}}),
        ("a list value", {"agent_id": [agent]}),
        ("a number value", {"agent_id": agent, "user_id": 42}),
    ]
    for channel in amp.channels:
        for what, scope in bad_scopes:
            arguments = {"scope": scope, "content": "malformed scope", "force": True}
            result = amp.call("amp.encode", arguments, on=channel)
            amp.expect_error(result, "invalid_request", f"amp.encode with {what} in scope")


@check("AMP11-SCOPE-13")
def test_a_new_scope_is_empty_not_an_error(amp: Amp11Context) -> None:
    """A never-written scope answers an empty recall and memory_count 0."""
    for channel in amp.channels:
        scope = amp.scope("fresh")
        amp.blocked_if_scope_form_refused(amp.call("amp.recall", {"scope": scope, "query": "x"}, on=channel))
        results = amp.recall(scope, "anything at all", on=channel)
        amp.expect(results == [], f"over {channel}: a fresh scope recalls {len(results)} memories", results)
        count = amp.count(scope, on=channel)
        amp.expect(count == 0, f"over {channel}: a fresh scope counts {count}", amp.latest)


@check("AMP11-SCOPE-14")
def test_consolidate_leaves_other_scopes_alone(amp: Amp11Context) -> None:
    """amp.consolidate of one scope leaves another scope's memories unchanged."""
    amp.need_verb("amp.consolidate")
    for channel in amp.channels:
        agent = amp.session.unique("agent")
        target = {"agent_id": agent, "session_id": amp.session.unique("s1")}
        bystander = {"agent_id": agent, "session_id": amp.session.unique("s2")}
        token = amp.token()
        text = f"duplicate bystander memory {token}"
        ids = [amp.encode(bystander, text, on=channel) for _ in range(2)]
        amp.encode(target, f"duplicate target memory {token}", on=channel)
        amp.encode(target, f"duplicate target memory {token}", on=channel)
        amp.ok("amp.consolidate", {"scope": target, "depth": "full"}, on=channel)
        after = {r.get("id"): r.get("status") for r in amp.recall(bystander, token, on=channel)}
        for memory_id in ids:
            amp.expect(
                after.get(memory_id) == "active",
                f"over {channel}: consolidating another scope changed a bystander memory "
                f"(status now {shown(after.get(memory_id))})",
                amp.latest,
            )
