"""amp.consolidate (§3.3.1) and amp.pin (§3.3.2): statuses, pins surviving consolidation, archiving."""

from __future__ import annotations

from amp_conformance.amp11.channels import MCP
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown


@check("AMP11-CONS-01")
def test_consolidate_answers_ok_or_queued(amp: Amp11Context) -> None:
    """amp.consolidate answers ok or queued for depth full, light, and no depth."""
    amp.need_verb("amp.consolidate")
    for channel in amp.channels:
        scope = amp.scope()
        amp.encode(scope, f"consolidation input {amp.token()}", on=channel)
        for extra in ({"depth": "full"}, {"depth": "light"}, {}):
            value = amp.ok("amp.consolidate", {"scope": scope, **extra}, on=channel)
            status = value.get("status")
            amp.expect(
                status in ("ok", "queued"),
                f"over {channel}: {extra or 'no depth'} answered {shown(status)}",
                value,
            )


@check("AMP11-CONS-02")
def test_consolidate_ok_counts_processed(amp: Amp11Context) -> None:
    """A consolidate answered ok carries an integer memories_processed >= 0."""
    amp.need_verb("amp.consolidate")
    for channel in amp.channels:
        scope = amp.scope()
        for number in range(3):
            amp.encode(scope, f"processed {number} {amp.token()}", on=channel)
        value = amp.ok("amp.consolidate", {"scope": scope, "depth": "full"}, on=channel)
        if value.get("status") != "ok":
            amp.note(f"over {channel}: consolidate answered {shown(value.get('status'))}")
            continue
        processed = value.get("memories_processed")
        amp.expect(
            type(processed) is int and processed >= 0,
            f"over {channel}: memories_processed {shown(processed)}",
            value,
        )


@check("AMP11-CONS-03")
def test_unknown_depth_is_refused(amp: Amp11Context) -> None:
    """An unknown depth is refused with invalid_request."""
    amp.need_verb("amp.consolidate")
    for channel in amp.channels:
        result = amp.call("amp.consolidate", {"scope": amp.scope(), "depth": "deep"}, on=channel)
        amp.full_verb_answer(result)
        amp.expect_error(result, "invalid_request", "consolidate with depth 'deep'")


@check("AMP11-CONS-04")
def test_consolidation_never_archives_a_pin(amp: Amp11Context) -> None:
    """A pinned memory is neither archived nor removed by consolidation."""
    amp.need_verb("amp.pin")
    amp.need_verb("amp.consolidate")
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        ids = [amp.encode(scope, f"superseded duplicate {token}", on=channel) for _ in range(3)]
        for memory_id in ids:
            amp.ok("amp.pin", {"scope": scope, "id": memory_id}, on=channel, what="pinning (precondition)")
        amp.ok("amp.consolidate", {"scope": scope, "depth": "full"}, on=channel)
        pinned = {r.get("id"): r.get("status") for r in amp.recall(scope, token, on=channel)}
        for memory_id in ids:
            amp.expect(
                pinned.get(memory_id) == "pinned",
                f"over {channel}: a pinned memory is {shown(pinned.get(memory_id, 'gone'))} "
                "after consolidation",
                amp.latest,
            )


@check("AMP11-CONS-05")
def test_archived_memories_stay_in_the_store(amp: Amp11Context) -> None:
    """What consolidation archives leaves default recall and is found with filters.status archived."""
    amp.need_verb("amp.consolidate")
    observed = False
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        ids = [amp.encode(scope, f"superseded duplicate {token}", on=channel) for _ in range(3)]
        amp.ok("amp.consolidate", {"scope": scope, "depth": "full"}, on=channel)
        default = {r.get("id") for r in amp.recall(scope, token, on=channel)}
        archived = {r.get("id") for r in amp.recall(scope, token, on=channel, filters={"status": "archived"})}
        for memory_id in ids:
            if memory_id in default:
                continue
            observed = True
            amp.expect(
                memory_id in archived,
                f"over {channel}: {memory_id} left default recall but is not found as archived",
                amp.latest,
            )
    if not observed:
        amp.skip("consolidation archived nothing here, so there is nothing to look for")


@check("AMP11-PIN-01")
def test_pin_answers_pinned_and_sticks(amp: Amp11Context) -> None:
    """Pinning answers pinned, and the memory then reports status pinned."""
    amp.need_verb("amp.pin")
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        memory_id = amp.encode(scope, f"pin me {token}", on=channel)
        value = amp.ok("amp.pin", {"scope": scope, "id": memory_id}, on=channel)
        amp.expect(
            value.get("status") == "pinned",
            f"over {channel}: pin answered {shown(value.get('status'))}",
            value,
        )
        found = amp.find(scope, memory_id, token, on=channel)
        status = found.get("status") if found else "gone"
        amp.expect(status == "pinned", f"over {channel}: after pinning, status is {shown(status)}", found)


@check("AMP11-PIN-02")
def test_pin_unknown_id_is_not_found(amp: Amp11Context) -> None:
    """Pinning an unknown id answers not_found, in band or as a not_found error."""
    amp.need_verb("amp.pin")
    for channel in amp.channels:
        result = amp.call("amp.pin", {"scope": amp.scope(), "id": "amp11-never-issued"}, on=channel)
        amp.full_verb_answer(result)
        if result.ok:
            status = (result.value or {}).get("status")
            amp.expect(status == "not_found", f"over {channel}: unknown id answered {shown(status)}", result)
            amp.note(f"over {channel}: unknown id answered in band (conflict C1)")
        else:
            amp.expect_error(result, "not_found", "pin of an unknown id")
            amp.note(f"over {channel}: unknown id answered as a not_found error (conflict C1)")


@check("AMP11-PIN-03")
def test_pinning_twice_changes_nothing(amp: Amp11Context) -> None:
    """Pinning a pinned memory answers pinned again."""
    amp.need_verb("amp.pin")
    for channel in amp.channels:
        scope = amp.scope()
        memory_id = amp.encode(scope, f"pin twice {amp.token()}", on=channel)
        for attempt in (1, 2):
            value = amp.ok("amp.pin", {"scope": scope, "id": memory_id}, on=channel)
            status = value.get("status")
            amp.expect(status == "pinned", f"over {channel}: pin #{attempt} answered {shown(status)}", value)
        amp.expect(
            amp.count(scope, on=channel) == 1, f"over {channel}: pinning twice changed the count", amp.latest
        )


@check("AMP11-PIN-04")
def test_pin_without_id_is_refused(amp: Amp11Context) -> None:
    """amp.pin without an id is refused with invalid_request (MCP: REST carries the id in its path)."""
    amp.need_verb("amp.pin")
    amp.require(MCP)
    result = amp.call("amp.pin", {"scope": amp.scope()}, on=MCP)
    amp.full_verb_answer(result)
    amp.expect_error(result, "invalid_request", "pin without an id")
