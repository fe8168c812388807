"""amp.recall (§3.2.2): results, top_k, ordering, filters; amp.forget (§3.2.3); amp.stats (§3.3.3)."""

from __future__ import annotations

from typing import Any

from amp_conformance.amp11.channels import MCP
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown


@check("AMP11-REC-01")
def test_recall_answers_a_results_list(amp: Amp11Context) -> None:
    """amp.recall answers {"results": [...]}, empty when nothing matches."""
    for channel in amp.channels:
        scope = amp.scope()
        amp.encode(scope, f"something {amp.token()}", on=channel)
        value = amp.ok("amp.recall", {"scope": scope, "query": amp.token()}, on=channel)
        results = value.get("results")
        amp.expect(isinstance(results, list), f"over {channel}: `results` is {shown(results)}", value)


@check("AMP11-REC-02")
def test_recall_honours_top_k(amp: Amp11Context) -> None:
    """Recall returns at most top_k results (default 10)."""
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        for number in range(12):
            amp.encode(scope, f"numbered memory {number} {token}", on=channel)
        for top_k in (1, 3):
            value = amp.ok("amp.recall", {"scope": scope, "query": token, "top_k": top_k}, on=channel)
            got = len(value.get("results") or [])
            amp.expect(got <= top_k, f"over {channel}: top_k {top_k} answered {got} results", value)
        default = amp.ok("amp.recall", {"scope": scope, "query": token}, on=channel)
        got = len(default.get("results") or [])
        amp.expect(got <= 10, f"over {channel}: no top_k answered {got} results (default 10)", default)


@check("AMP11-REC-03")
def test_results_are_ordered_by_score(amp: Amp11Context) -> None:
    """Results come in descending score order."""
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        amp.encode(scope, f"cats dogs birds fish {token}", on=channel)
        amp.encode(scope, f"cats only {token}", on=channel)
        amp.encode(scope, f"nothing related {token}", on=channel)
        results = amp.recall(scope, f"cats dogs birds fish {token}", on=channel)
        scores = [r.get("score") for r in results]
        numeric = [s for s in scores if isinstance(s, int | float)]
        amp.expect(len(numeric) == len(scores), f"over {channel}: non-numeric scores {scores}", results)
        amp.expect(
            numeric == sorted(numeric, reverse=True),
            f"over {channel}: scores {numeric} not descending",
            results,
        )


def _seed_archived(amp: Amp11Context, channel: str, scope: dict[str, str], token: str) -> set[str]:
    """Seed near-duplicates and consolidate; the ids consolidation archived (maybe none)."""
    ids = [amp.encode(scope, f"duplicate fact {token}", on=channel) for _ in range(3)]
    result = amp.call("amp.consolidate", {"scope": scope, "depth": "full"}, on=channel)
    if not result.ok:
        return set()
    archived = amp.recall(scope, token, on=channel, filters={"status": "archived"})
    return {r["id"] for r in archived if r.get("id") in ids}


@check("AMP11-REC-04")
def test_default_recall_excludes_archived(amp: Amp11Context) -> None:
    """Without a status filter, recall never returns archived memories."""
    observed = False
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        archived = _seed_archived(amp, channel, scope, token)
        results = amp.recall(scope, token, on=channel)
        statuses = [r.get("status") for r in results]
        amp.expect(
            "archived" not in statuses, f"over {channel}: default recall returned archived memories", results
        )
        leaked = archived & {r.get("id") for r in results}
        amp.expect(not leaked, f"over {channel}: archived ids {sorted(leaked)} in default recall", results)
        observed = observed or bool(archived)
    if not observed:
        amp.note("no memory was archived by consolidation, so only the status field was checked")


@check("AMP11-REC-05")
def test_default_recall_includes_pinned(amp: Amp11Context) -> None:
    """Without a status filter, recall returns pinned memories as well as active ones."""
    amp.need_verb("amp.pin")
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        pinned = amp.encode(scope, f"pinned one {token}", on=channel)
        active = amp.encode(scope, f"active one {token}", on=channel)
        amp.ok("amp.pin", {"scope": scope, "id": pinned}, on=channel, what="pinning (precondition)")
        ids = {r.get("id") for r in amp.recall(scope, token, on=channel)}
        amp.expect(
            {pinned, active} <= ids,
            f"over {channel}: default recall misses the pinned or active one",
            amp.latest,
        )


@check("AMP11-REC-06")
def test_status_filter(amp: Amp11Context) -> None:
    """filters.status returns only memories with that status."""
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        first = amp.encode(scope, f"status filter one {token}", on=channel)
        amp.encode(scope, f"status filter two {token}", on=channel)
        pin = amp.call("amp.pin", {"scope": scope, "id": first}, on=channel)
        for status in ("active", "pinned", "archived"):
            results = amp.recall(scope, token, on=channel, filters={"status": status})
            wrong = [r.get("status") for r in results if r.get("status") != status]
            amp.expect(not wrong, f"over {channel}: status filter {status} returned {wrong}", results)
        if pin.ok:
            pinned = amp.recall(scope, token, on=channel, filters={"status": "pinned"})
            amp.expect(
                [r.get("id") for r in pinned] == [first],
                f"over {channel}: the pinned filter misses the pin",
                pinned,
            )


@check("AMP11-REC-07")
def test_timestamp_filters(amp: Amp11Context) -> None:
    """timestamp_after in the future or timestamp_before in the past exclude all; wide bounds none."""
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        memory_id = amp.encode(scope, f"timestamped {token}", on=channel)
        bounds: list[tuple[dict[str, Any], bool]] = [
            ({"timestamp_after": "2099-01-01T00:00:00Z"}, False),
            ({"timestamp_before": "2000-01-01T00:00:00Z"}, False),
            ({"timestamp_after": "2000-01-01T00:00:00Z", "timestamp_before": "2099-01-01T00:00:00Z"}, True),
        ]
        for filters, present in bounds:
            ids = {r.get("id") for r in amp.recall(scope, token, on=channel, filters=filters)}
            amp.expect(
                (memory_id in ids) is present,
                f"over {channel}: filters {filters} {'dropped' if present else 'kept'} the memory",
                amp.latest,
            )


@check("AMP11-REC-08")
def test_source_filter(amp: Amp11Context) -> None:
    """filters.source returns only memories with that source label."""
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        stated = amp.encode(scope, f"stated {token}", on=channel, source="user_stated")
        inferred = amp.encode(scope, f"inferred {token}", on=channel, source="inferred")
        ids = {r.get("id") for r in amp.recall(scope, token, on=channel, filters={"source": "inferred"})}
        amp.expect(
            inferred in ids and stated not in ids, f"over {channel}: source filter returned {ids}", amp.latest
        )


@check("AMP11-REC-09")
def test_malformed_recall_inputs_are_refused(amp: Amp11Context) -> None:
    """Missing or empty query, bad top_k, or an unparseable timestamp: invalid_request."""
    for channel in amp.channels:
        scope = amp.scope()
        cases: list[tuple[str, dict[str, Any]]] = [
            ("no query", {"scope": scope}),
            ("an empty query", {"scope": scope, "query": ""}),
            ("top_k 0", {"scope": scope, "query": "x", "top_k": 0}),
            ("top_k as text", {"scope": scope, "query": "x", "top_k": "ten"}),
            ("a bad timestamp", {"scope": scope, "query": "x", "filters": {"timestamp_after": "yesterday"}}),
        ]
        for what, arguments in cases:
            amp.expect_error(
                amp.call("amp.recall", arguments, on=channel), "invalid_request", f"recall with {what}"
            )


@check("AMP11-REC-10")
def test_unknown_filter_key_is_refused(amp: Amp11Context) -> None:
    """An unknown filter key is refused with invalid_request."""
    for channel in amp.channels:
        arguments = {"scope": amp.scope(), "query": "x", "filters": {"colour": "red"}}
        amp.expect_error(
            amp.call("amp.recall", arguments, on=channel), "invalid_request", "an unknown filter"
        )


@check("AMP11-REC-11")
def test_scores_are_non_negative(amp: Amp11Context) -> None:
    """score is a non-negative number."""
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        amp.encode(scope, f"score check {token}", on=channel)
        for result in amp.recall(scope, token, on=channel):
            score = result.get("score")
            amp.expect(
                isinstance(score, int | float) and score >= 0, f"over {channel}: score {shown(score)}", result
            )


# -- amp.forget ------------------------------------------------------------------------------------


@check("AMP11-FGT-01")
def test_forget_answers_forgotten(amp: Amp11Context) -> None:
    """Forgetting an existing memory in its scope answers forgotten."""
    for channel in amp.channels:
        scope = amp.scope()
        memory_id = amp.encode(scope, f"to forget {amp.token()}", on=channel, remember=False)
        result = amp.call("amp.forget", {"scope": scope, "id": memory_id}, on=channel)
        amp.expect(result.ok, result.describe(), result)
        status = (result.value or {}).get("status")
        amp.expect(status == "forgotten", f"over {channel}: forget answered {shown(status)}", result)


@check("AMP11-FGT-02")
def test_forget_unknown_id_is_not_found(amp: Amp11Context) -> None:
    """Forgetting an unknown id answers not_found, in band or as a not_found error."""
    for channel in amp.channels:
        result = amp.call("amp.forget", {"scope": amp.scope(), "id": "amp11-never-issued"}, on=channel)
        if result.error_code != "not_found":
            amp.blocked_if_scope_form_refused(result)
        if result.ok:
            status = (result.value or {}).get("status")
            amp.expect(status == "not_found", f"over {channel}: unknown id answered {shown(status)}", result)
            amp.note(f"over {channel}: unknown id answered in band (status not_found) (conflict C1)")
        else:
            amp.expect_error(result, "not_found", "forget of an unknown id")
            amp.note(f"over {channel}: unknown id answered as a not_found error (conflict C1)")


@check("AMP11-FGT-03")
def test_forget_without_id_is_refused(amp: Amp11Context) -> None:
    """amp.forget without an id is refused with invalid_request (MCP: REST carries the id in its path)."""
    amp.require(MCP)
    result = amp.call("amp.forget", {"scope": amp.scope()}, on=MCP)
    amp.expect_error(result, "invalid_request", "forget without an id")


@check("AMP11-FGT-04")
def test_forgotten_memory_is_gone_everywhere(amp: Amp11Context) -> None:
    """A forgotten memory leaves recall (any status), stats and export; forgetting it again: not_found."""
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        memory_id = amp.encode(scope, f"gone soon {token}", on=channel, remember=False)
        amp.ok("amp.forget", {"scope": scope, "id": memory_id}, on=channel)
        for filters in ({}, {"status": "active"}, {"status": "archived"}, {"status": "pinned"}):
            ids = {r.get("id") for r in amp.recall(scope, token, on=channel, filters=filters)}
            amp.expect(memory_id not in ids, f"over {channel}: recall {filters} still returns it", amp.latest)
        amp.expect(amp.count(scope, on=channel) == 0, f"over {channel}: stats still counts it", amp.latest)
        export = amp.call("amp.export", {"scope": scope}, on=channel)
        if export.ok:
            amp.expect(
                memory_id not in str((export.value or {}).get("ndjson")), f"over {channel}: exported", export
            )
        again = amp.call("amp.forget", {"scope": scope, "id": memory_id}, on=channel)
        gone = (again.value or {}).get("status") == "not_found" or again.error_code == "not_found"
        amp.expect(gone, f"over {channel}: a second forget answered {again.describe()}", again)


# -- amp.stats -------------------------------------------------------------------------------------


@check("AMP11-STAT-01")
def test_stats_shape(amp: Amp11Context) -> None:
    """amp.stats answers an integer memory_count (and typed optional members)."""
    for channel in amp.channels:
        scope = amp.scope()
        amp.encode(scope, f"counted {amp.token()}", on=channel)
        result = amp.call("amp.stats", {"scope": scope}, on=channel)
        amp.expect(result.ok, result.describe(), result)
        value = result.value or {}
        count = value.get("memory_count")
        amp.expect(type(count) is int and count >= 0, f"over {channel}: memory_count {shown(count)}", result)
        if "unconsolidated_count" in value:
            other = value["unconsolidated_count"]
            amp.expect(
                type(other) is int and other >= 0,
                f"over {channel}: unconsolidated_count {shown(other)}",
                result,
            )
        if "metadata" in value:
            amp.expect(
                isinstance(value["metadata"], dict), f"over {channel}: metadata is not an object", result
            )


@check("AMP11-STAT-02")
def test_stats_follows_encode_and_forget(amp: Amp11Context) -> None:
    """memory_count rises by one per stored memory and falls by one per forgotten memory."""
    for channel in amp.channels:
        scope = amp.scope()
        first = amp.encode(scope, f"count one {amp.token()}", on=channel, remember=False)
        amp.expect(amp.count(scope, on=channel) == 1, f"over {channel}: one memory, count != 1", amp.latest)
        amp.encode(scope, f"count two {amp.token()}", on=channel)
        amp.expect(amp.count(scope, on=channel) == 2, f"over {channel}: two memories, count != 2", amp.latest)
        amp.ok("amp.forget", {"scope": scope, "id": first}, on=channel)
        amp.expect(
            amp.count(scope, on=channel) == 1, f"over {channel}: after a forget, count != 1", amp.latest
        )


@check("AMP11-STAT-03")
def test_stats_changes_nothing(amp: Amp11Context) -> None:
    """Repeated amp.stats calls give equal answers and leave recall unchanged."""
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        amp.encode(scope, f"steady {token}", on=channel)
        before = amp.recall(scope, token, on=channel)
        first = amp.ok("amp.stats", {"scope": scope}, on=channel)
        second = amp.ok("amp.stats", {"scope": scope}, on=channel)
        amp.expect(
            first.get("memory_count") == second.get("memory_count"), f"over {channel}: counts differ", second
        )
        after = amp.recall(scope, token, on=channel)
        same = [(r.get("id"), r.get("status")) for r in before] == [
            (r.get("id"), r.get("status")) for r in after
        ]
        amp.expect(same, f"over {channel}: recall changed after amp.stats", after)
