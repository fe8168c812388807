"""v1.0 compatibility (§5): the flat agent_id, the deprecated private and visibility fields."""

from __future__ import annotations

from typing import Any

from amp_conformance.amp11.context import Amp11Context
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown


@check("AMP11-COMPAT-01")
def test_flat_agent_id_works_on_every_verb(amp: Amp11Context) -> None:
    """A root agent_id without scope is accepted on every verb and means scope {agent_id}."""
    for channel in amp.channels:
        agent = amp.session.unique("legacy")
        token = amp.token()
        value = amp.ok(
            "amp.encode", {"agent_id": agent, "content": f"legacy {token}", "force": True}, on=channel
        )
        memory_id = value.get("id")
        amp.expect(isinstance(memory_id, str), f"over {channel}: a flat agent_id encode gave no id", value)
        recalled = amp.ok("amp.recall", {"agent_id": agent, "query": token}, on=channel)
        ids = [r.get("id") for r in recalled.get("results") or [] if isinstance(r, dict)]
        amp.expect(memory_id in ids, f"over {channel}: flat agent_id recall misses the memory", recalled)
        stats = amp.ok("amp.stats", {"agent_id": agent}, on=channel)
        amp.expect(stats.get("memory_count") == 1, f"over {channel}: flat agent_id stats {stats}", stats)
        for verb, extra in (("amp.pin", {"id": memory_id}), ("amp.export", {}), ("amp.consolidate", {})):
            result = amp.call(verb, {"agent_id": agent, **extra}, on=channel)
            if amp.full_verb_refused(result):
                continue
            amp.expect(result.ok, f"flat agent_id: {result.describe()}", result)
        forgot = amp.ok("amp.forget", {"agent_id": agent, "id": memory_id}, on=channel)
        amp.expect(
            forgot.get("status") == "forgotten", f"over {channel}: flat agent_id forget {forgot}", forgot
        )


@check("AMP11-COMPAT-02")
def test_flat_and_scoped_forms_are_one_namespace(amp: Amp11Context) -> None:
    """A memory encoded with a flat agent_id is recalled with scope {agent_id}, and the other way round."""
    for channel in amp.channels:
        agent = amp.session.unique("legacy")
        token = amp.token()
        flat = amp.ok(
            "amp.encode", {"agent_id": agent, "content": f"flat {token}", "force": True}, on=channel
        )
        amp.session.remember(channel, {"scope": {"agent_id": agent}, "id": flat.get("id")})
        scoped = amp.encode({"agent_id": agent}, f"scoped {token}", on=channel)
        by_scope = {r.get("id") for r in amp.recall({"agent_id": agent}, token, on=channel)}
        amp.expect(
            flat.get("id") in by_scope,
            f"over {channel}: scope {{agent_id}} misses the flat memory",
            amp.latest,
        )
        by_flat = amp.ok("amp.recall", {"agent_id": agent, "query": token, "top_k": 50}, on=channel)
        ids = {r.get("id") for r in by_flat.get("results") or [] if isinstance(r, dict)}
        amp.expect(scoped in ids, f"over {channel}: a flat agent_id recall misses the scoped memory", by_flat)


@check("AMP11-COMPAT-03")
def test_private_is_accepted(amp: Amp11Context) -> None:
    """private (boolean) on encode is accepted, with or without scope."""
    for channel in amp.channels:
        agent = amp.session.unique("legacy")
        for private in (True, False):
            flat = {"agent_id": agent, "content": f"private {private} {amp.token()}", "force": True}
            for arguments in (
                {**flat, "private": private},
                {**flat, "scope": amp.scope(), "private": private},
            ):
                if "scope" in arguments:
                    arguments.pop("agent_id")
                result = amp.call("amp.encode", arguments, on=channel)
                if "scope" in arguments:
                    amp.blocked_if_scope_form_refused(result)
                amp.expect(result.ok, f"private={private}: {result.describe()}", result)
                memory_id = (result.value or {}).get("id")
                if isinstance(memory_id, str):
                    scope = arguments.get("scope") or {"agent_id": agent}
                    amp.session.remember(channel, {"scope": scope, "id": memory_id})


@check("AMP11-COMPAT-04")
def test_private_is_ignored_when_scope_is_present(amp: Amp11Context) -> None:
    """With scope present, private is ignored: the memory lands under the scope."""
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        memory_id = amp.encode(scope, f"scoped private {token}", on=channel, private=True)
        found = amp.find(scope, memory_id, token, on=channel)
        amp.expect(
            found is not None, f"over {channel}: a scoped encode with private:true is not in its scope", found
        )


@check("AMP11-COMPAT-05")
def test_visibility_filter_is_parsed(amp: Amp11Context) -> None:
    """filters.visibility on recall is parsed, never refused."""
    for channel in amp.channels:
        scope = amp.scope()
        amp.encode(scope, f"visible {amp.token()}", on=channel)
        for visibility in ("private", "shared"):
            arguments = {"scope": scope, "query": "visible", "filters": {"visibility": visibility}}
            result = amp.call("amp.recall", arguments, on=channel)
            amp.expect(result.ok, f"visibility {visibility}: {result.describe()}", result)


def _legacy_encodes(amp: Amp11Context, channel: str) -> list[tuple[Any, dict[str, Any]]]:
    agent = amp.session.unique("legacy")
    answers: list[tuple[Any, dict[str, Any]]] = []
    for private in (True, False, None):
        arguments: dict[str, Any] = {"agent_id": agent, "content": f"echo {amp.token()}", "force": True}
        if private is not None:
            arguments["private"] = private
        value = amp.ok("amp.encode", arguments, on=channel)
        if isinstance(value.get("id"), str):
            amp.session.remember(channel, {"scope": {"agent_id": agent}, "id": value["id"]})
        answers.append((private, value))
    return answers


@check("AMP11-COMPAT-06")
def test_visibility_values(amp: Amp11Context) -> None:
    """A visibility member, when present, is private or shared."""
    for channel in amp.channels:
        answers = [value for _, value in _legacy_encodes(amp, channel)]
        scope = amp.scope()
        amp.encode(scope, f"visibility values {amp.token()}", on=channel)
        answers += amp.recall(scope, "visibility values", on=channel)
        for value in answers:
            if "visibility" in value:
                echoed = value["visibility"]
                amp.expect(
                    echoed in ("private", "shared"), f"over {channel}: visibility {shown(echoed)}", amp.latest
                )


@check("AMP11-COMPAT-07")
def test_visibility_echo(amp: Amp11Context) -> None:
    """A legacy encode's visibility echo agrees with its private flag; §5 lets a server populate
    visibility on any encode, so a v1.1-native encode may echo either value or none (conflict C11)."""
    for channel in amp.channels:
        for private, value in _legacy_encodes(amp, channel):
            echoed = value.get("visibility")
            if private is None or echoed is None:
                amp.note(
                    f"over {channel}: private={private} echoed visibility {shown(echoed)} (§5 allows it)"
                )
                continue
            wanted = "private" if private else "shared"
            amp.expect(
                echoed == wanted,
                f"over {channel}: private={private} echoed visibility {shown(echoed)}, "
                "contradicting the flag",
                amp.latest,
                expected=wanted,
            )
