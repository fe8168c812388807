"""amp.encode (§3.2.1) and content fidelity (§2.1, §4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from amp_conformance.amp11.context import Amp11Context
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown


@check("AMP11-ENC-01")
def test_forced_encode_stores(amp: Amp11Context) -> None:
    """amp.encode with force stores the memory: status stored and a non-empty id."""
    for channel in amp.channels:
        scope = amp.scope()
        arguments = {"scope": scope, "content": f"forced {amp.token()}", "force": True}
        result = amp.call("amp.encode", arguments, on=channel)
        amp.expect(result.ok, result.describe(), result)
        value = result.value or {}
        amp.expect(
            value.get("status") == "stored", f"over {channel}: status {shown(value.get('status'))}", result
        )
        memory_id = value.get("id")
        amp.expect(isinstance(memory_id, str) and memory_id, f"over {channel}: no id", result)
        amp.session.remember(channel, {"scope": scope, "id": memory_id})


@check("AMP11-ENC-02")
def test_encode_status_and_id(amp: Amp11Context) -> None:
    """status is stored / duplicate / below_threshold / queued, with an id for all but below_threshold."""
    for channel in amp.channels:
        scope = amp.scope()
        for force in (True, False):
            arguments = {"scope": scope, "content": f"status {force} {amp.token()}", "force": force}
            result = amp.call("amp.encode", arguments, on=channel)
            value = amp.served(result)  # a refused encode is AMP11-ENC-01's finding, not this one's
            status = value.get("status")
            amp.expect(
                status in ("stored", "duplicate", "below_threshold", "queued"),
                f"over {channel}: status {shown(status)}",
                result,
            )
            if status != "below_threshold":
                amp.expect(isinstance(value.get("id"), str), f"over {channel}: {status} without id", result)
                amp.session.remember(channel, {"scope": scope, "id": value["id"]})


@check("AMP11-ENC-03")
def test_stored_twice_means_two_ids(amp: Amp11Context) -> None:
    """Two encodes both answered stored return different ids, even for identical content."""
    for channel in amp.channels:
        scope = amp.scope()
        content = f"twice {amp.token()}"
        results = [amp.ok("amp.encode", {"scope": scope, "content": content, "force": True}, on=channel)]
        results.append(amp.ok("amp.encode", {"scope": scope, "content": content, "force": True}, on=channel))
        for value in results:
            if isinstance(value.get("id"), str):
                amp.session.remember(channel, {"scope": scope, "id": value["id"]})
        if all(v.get("status") == "stored" for v in results):
            amp.expect(results[0]["id"] != results[1]["id"], f"over {channel}: both stores got one id", value)
        else:
            amp.note(f"over {channel}: identical content answered {[v.get('status') for v in results]}")


@check("AMP11-ENC-04")
def test_encode_without_content_is_refused(amp: Amp11Context) -> None:
    """amp.encode without content is refused with invalid_request."""
    for channel in amp.channels:
        result = amp.call("amp.encode", {"scope": amp.scope(), "force": True}, on=channel)
        amp.expect_error(result, "invalid_request", "amp.encode without content")


@check("AMP11-ENC-05")
def test_empty_content_creates_nothing(amp: Amp11Context) -> None:
    """Empty or whitespace content is refused (invalid_request) or below_threshold, and stores nothing."""
    for channel in amp.channels:
        scope = amp.scope()
        for content in ("", "   \n\t"):
            arguments = {"scope": scope, "content": content, "force": True}
            result = amp.call("amp.encode", arguments, on=channel)
            if result.ok:
                status = (result.value or {}).get("status")
                amp.expect(
                    status == "below_threshold",
                    f"over {channel}: content {shown(content)} answered status {shown(status)}",
                    result,
                    expected="invalid_request or below_threshold",
                )
            else:
                amp.expect_error(result, "invalid_request", f"amp.encode with content {shown(content)}")
        counted = amp.call("amp.stats", {"scope": scope}, on=channel)
        amp.blocked_if_scope_form_refused(counted)
        count = amp.count(scope, on=channel)
        amp.expect(count == 0, f"over {channel}: empty content created {count} memories", amp.latest)


@check("AMP11-ENC-06")
def test_below_threshold_stores_nothing(amp: Amp11Context) -> None:
    """A below_threshold answer creates no memory (observed when the server gates salience)."""
    seen = False
    for channel in amp.channels:
        scope = amp.scope()
        below: list[str] = []
        stored: list[str] = []
        for content in ("ok", "the", "hmm", "a"):
            value = amp.ok("amp.encode", {"scope": scope, "content": content}, on=channel)
            if value.get("status") == "below_threshold":
                below.append(content)
            elif isinstance(value.get("id"), str):
                stored.append(value["id"])
                amp.session.remember(channel, {"scope": scope, "id": value["id"]})
        if not below:
            continue
        seen = True
        count = amp.count(scope, on=channel)
        amp.expect(
            count == len(stored), f"over {channel}: {len(stored)} stored, memory_count {count}", amp.latest
        )
        mine = [r for r in amp.recall(scope, "ok the hmm a", on=channel) if r.get("scope") == scope]
        created = [r.get("content") for r in mine if r.get("id") not in stored]
        amp.expect(not created, f"over {channel}: below_threshold content was stored: {created}", amp.latest)
    if not seen:
        amp.skip("the server stored every low-salience probe: no below_threshold to observe")


@check("AMP11-ENC-07")
def test_stored_memory_is_recalled_active_with_source_and_time(amp: Amp11Context) -> None:
    """A stored memory is recalled under its scope: status active, its source, a fresh timestamp."""
    # two labels: a server that writes one fixed label over the caller's shows on one of them
    for channel, source in ((c, s) for c in amp.channels for s in ("user_stated", "inferred")):
        scope = amp.scope()
        token = amp.token()
        before = datetime.now(UTC) - timedelta(minutes=5)
        memory_id = amp.encode(scope, f"recall me {token}", on=channel, source=source)
        after = datetime.now(UTC) + timedelta(minutes=5)
        found = amp.find(scope, memory_id, token, on=channel)
        amp.expect(found is not None, f"over {channel}: the stored memory is not recalled", found)
        assert found is not None
        amp.expect(
            found.get("status") == "active", f"over {channel}: status {shown(found.get('status'))}", found
        )
        amp.expect(
            found.get("source") == source,
            f"over {channel}: encoded with source {shown(source)}, "
            f"recalled with {shown(found.get('source'))}",
            found,
        )
        stamp = _parse_time(found.get("timestamp"))
        amp.expect(stamp is not None, f"over {channel}: timestamp {shown(found.get('timestamp'))}", found)
        assert stamp is not None
        amp.expect(
            before <= stamp <= after, f"over {channel}: timestamp {stamp} is not the time of the call", found
        )


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


@check("AMP11-ENC-08")
def test_queued_encode_carries_event_id(amp: Amp11Context) -> None:
    """An encode answered queued carries an event_id."""
    for channel in amp.channels:
        scope = amp.scope()
        value = amp.ok("amp.encode", {"scope": scope, "content": f"queue {amp.token()}"}, on=channel)
        if isinstance(value.get("id"), str):
            amp.session.remember(channel, {"scope": scope, "id": value["id"]})
        if value.get("status") == "queued":
            amp.expect(
                isinstance(value.get("event_id"), str), f"over {channel}: queued without event_id", value
            )
            return
    amp.skip("the server never queued an encode")


@check("AMP11-ENC-09")
def test_wrongly_typed_fields_are_refused(amp: Amp11Context) -> None:
    """force not a boolean, metadata not an object, or an unknown field: invalid_request."""
    for channel in amp.channels:
        scope = amp.scope()
        bad: list[tuple[str, dict[str, Any]]] = [
            ("force as a string", {"force": "yes"}),
            ("metadata as a list", {"metadata": ["a"]}),
            ("an unknown field", {"colour": "red"}),
        ]
        for what, extra in bad:
            arguments = {"scope": scope, "content": f"typed {amp.token()}", **extra}
            result = amp.call("amp.encode", arguments, on=channel)
            if result.ok and isinstance((result.value or {}).get("id"), str):
                amp.session.remember(channel, {"scope": scope, "id": (result.value or {})["id"]})
            amp.expect_error(result, "invalid_request", f"amp.encode with {what}")


# -- content fidelity ------------------------------------------------------------------------------

UNICODE = "Ελληνικά · Кириллица · 日本語のテキスト · עברית · العربية · 👩🏽‍💻🚀 · e\u0301 · 𓀀𒀀 · \u200d"
SPECIAL = 'quotes " and \' back\\slash\nnew line\ttab <script>alert(1)</script> {"json": [1]} \u0007'


def _round_trip(amp: Amp11Context, content: str, requirement: str, **fields: Any) -> None:
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        text = f"{token} {content}"
        memory_id = amp.encode(scope, text, on=channel, **fields)
        found = amp.find(scope, memory_id, token, on=channel)
        amp.expect(found is not None, f"over {channel}: the memory is not recalled by its token", found)
        assert found is not None
        amp.expect(
            found.get("content") == text,
            f"over {channel}: content came back as {shown(found.get('content'))}, stored {shown(text)}",
            found,
            expected=shown(text),
        )
        if fields.get("metadata") is not None:
            metadata = found.get("metadata")
            amp.expect(isinstance(metadata, dict), f"over {channel}: no metadata came back", found)
            assert isinstance(metadata, dict)
            for key, value in fields["metadata"].items():
                amp.expect(
                    key in metadata and metadata[key] == value and type(metadata[key]) is type(value),
                    f"over {channel}: metadata {shown(key)} came back as {shown(metadata.get(key))}, "
                    f"stored {shown(value)}",
                    found,
                )


@check("AMP11-FID-01")
def test_content_round_trips_exactly(amp: Amp11Context) -> None:
    """Recalled content equals the encoded content exactly."""
    _round_trip(amp, "The user prefers dark mode and drinks green tea at 07:30.", "FID-01")


@check("AMP11-FID-02")
def test_unicode_content_round_trips(amp: Amp11Context) -> None:
    """Non-Latin scripts, astral-plane characters, emoji with joiners and combining marks round-trip."""
    _round_trip(amp, UNICODE, "FID-02")


@check("AMP11-FID-03")
def test_json_special_characters_round_trip(amp: Amp11Context) -> None:
    """Quotes, backslashes, newlines, tabs and markup round-trip."""
    _round_trip(amp, SPECIAL, "FID-03")


@check("AMP11-FID-04")
def test_user_metadata_round_trips(amp: Amp11Context) -> None:
    """User metadata of every JSON type (and unicode keys) round-trips."""
    metadata = {
        "tag": "alpha",
        "count": 3,
        "ratio": 0.25,
        "flag": False,
        "nothing": None,
        "nested": {"list": [1, "two", {"three": 3}], "empty": {}},
        "ключ-🔑": "значение",
    }
    _round_trip(amp, "metadata carrier", "FID-04", metadata=metadata)


@check("AMP11-FID-05")
def test_reserved_metadata_round_trips(amp: Amp11Context) -> None:
    """The six reserved amp.* keys round-trip with their documented types."""
    metadata = {
        "amp.ttl": 86400,
        "amp.confidence": 0.75,
        "amp.entities": ["person:Alice", "concept:React"],
        "amp.relations": [{"subject": "Alice", "predicate": "likes", "object": "tea"}],
        "amp.categories": ["preference"],
        "amp.summary": "Alice likes tea.",
    }
    _round_trip(amp, "reserved keys carrier", "FID-05", metadata=metadata)


@check("AMP11-FID-06")
def test_malformed_reserved_metadata_is_refused(amp: Amp11Context) -> None:
    """A reserved key outside its definition is refused with invalid_request."""
    bad: list[dict[str, Any]] = [
        {"amp.confidence": 1.5},
        {"amp.confidence": "high"},
        {"amp.ttl": -1},
        {"amp.entities": "Alice"},
        {"amp.relations": [{"subject": "Alice", "object": "tea"}]},
    ]
    for channel in amp.channels:
        scope = amp.scope()
        for metadata in bad:
            arguments = {"scope": scope, "content": f"bad reserved {amp.token()}", "force": True}
            result = amp.call("amp.encode", {**arguments, "metadata": metadata}, on=channel)
            if result.ok and isinstance((result.value or {}).get("id"), str):
                amp.session.remember(channel, {"scope": scope, "id": (result.value or {})["id"]})
            amp.expect_error(result, "invalid_request", f"amp.encode with metadata {metadata}")


@check("AMP11-FID-07")
def test_unicode_scope_values_round_trip_and_isolate(amp: Amp11Context) -> None:
    """Unicode scope values round-trip and isolate like ASCII ones."""
    for channel in amp.channels:
        suffix = amp.session.unique("ws")
        scope = {"agent_id": f"агент-🤖-{suffix}", "workspace_id": f"空间-{suffix}"}
        near = {"agent_id": f"агент-🤖-{suffix}", "workspace_id": f"空间-{suffix}x"}
        token = amp.token()
        memory_id = amp.encode(scope, f"unicode scope {token}", on=channel)
        found = amp.find(scope, memory_id, token, on=channel)
        amp.expect(found is not None, f"over {channel}: not recalled under a unicode scope", found)
        assert found is not None
        amp.expect(
            found.get("scope") == scope, f"over {channel}: scope came back as {found.get('scope')}", found
        )
        amp.expect(
            amp.find(near, memory_id, token, on=channel) is None,
            f"over {channel}: a neighbouring unicode scope sees the memory",
            amp.latest,
        )
