"""amp.export / amp.import and the Memory Exchange Format (Appendix A, §3.3.4, §3.3.5)."""

from __future__ import annotations

import json
from typing import Any

from amp_conformance.amp11.channels import Value
from amp_conformance.amp11.checks._support import ndjson, row
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.amp11.schemas import definition_problems
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown

MAX_PAGES = 20


def _import(amp: Amp11Context, channel: str, scope: dict[str, Any], document: str, **policies: str) -> Any:
    return amp.call("amp.import", {"scope": scope, "ndjson": document, **policies}, on=channel)


def _imported(
    amp: Amp11Context, channel: str, scope: dict[str, Any], document: str, **policies: str
) -> dict[str, Any]:
    result = _import(amp, channel, scope, document, **policies)
    amp.full_verb_answer(result)
    amp.expect(result.ok, f"import ({policies or 'defaults'}): {result.describe()}", result)
    return Value(result.value or {}, result.exchange)


def _counts(value: dict[str, Any]) -> tuple[Any, Any, Any]:
    return value.get("imported"), value.get("skipped"), value.get("failed")


# -- export ----------------------------------------------------------------------------------------


@check("AMP11-EXP-01")
def test_export_emits_one_line_per_memory(amp: Amp11Context) -> None:
    """amp.export emits the scope as NDJSON, one line per memory, count equal to the lines."""
    amp.need_verb("amp.export")
    for channel in amp.channels:
        scope = amp.scope()
        ids = {amp.encode(scope, f"export row {n} {amp.token()}", on=channel) for n in range(3)}
        rows, value = amp.export_rows({"scope": scope}, on=channel)
        amp.expect(len(rows) == 3, f"over {channel}: 3 memories exported as {len(rows)} lines", rows)
        amp.expect(
            value.get("count") == len(rows), f"over {channel}: count {value.get('count')} != lines", rows
        )
        exported = {r.get("id") for r in rows if isinstance(r, dict)}
        amp.expect(exported == ids, f"over {channel}: exported ids differ from the stored ones", rows)


@check("AMP11-EXP-02")
def test_mxf_rows_are_complete_memory_results(amp: Amp11Context) -> None:
    """Every MXF row is a MemoryResult with the full scope and status, content and metadata as stored."""
    amp.need_verb("amp.export")
    for channel in amp.channels:
        scope = {**amp.scope(), "user_id": amp.session.unique("user")}
        content = f"exported faithfully ✓ {amp.token()}"
        metadata = {"amp.categories": ["export"], "note": "kept"}
        memory_id = amp.encode(scope, content, on=channel, metadata=metadata)
        rows, _ = amp.export_rows({"scope": scope}, on=channel)
        mine = [r for r in rows if isinstance(r, dict) and r.get("id") == memory_id]
        amp.expect(len(mine) == 1, f"over {channel}: the memory is exported {len(mine)} times", _)
        exported = mine[0]
        problems = definition_problems("MemoryResult", exported)
        amp.expect(not problems, f"over {channel}: MXF row: {'; '.join(problems)}", _)
        amp.expect(exported.get("scope") == scope, f"over {channel}: row scope {exported.get('scope')}", _)
        amp.expect(exported.get("content") == content, f"over {channel}: row content differs", _)
        got = exported.get("metadata") or {}
        amp.expect(
            all(got.get(k) == v for k, v in metadata.items()), f"over {channel}: row metadata {got}", _
        )


@check("AMP11-EXP-03")
def test_export_of_an_empty_scope(amp: Amp11Context) -> None:
    """An empty scope exports no rows (or answers not_found; conflict C7)."""
    amp.need_verb("amp.export")
    for channel in amp.channels:
        result = amp.call("amp.export", {"scope": amp.scope("empty")}, on=channel)
        amp.full_verb_answer(result)
        if not result.ok:
            amp.expect_error(result, "not_found", "export of an empty scope")
            amp.note(f"over {channel}: an empty scope exports as not_found (conflict C7)")
            continue
        value = result.value or {}
        amp.expect(value.get("count") == 0, f"over {channel}: count {shown(value.get('count'))}", result)
        amp.expect(value.get("ndjson") == "", f"over {channel}: ndjson {shown(value.get('ndjson'))}", result)
        amp.expect("next_cursor" not in value, f"over {channel}: a cursor for an empty export", result)


def _seed(amp: Amp11Context, channel: str, count: int) -> tuple[dict[str, str], list[str]]:
    scope = amp.scope()
    return scope, [amp.encode(scope, f"paged {n} {amp.token()}", on=channel) for n in range(count)]


@check("AMP11-EXP-04")
def test_page_size_caps_pages_and_cursor_marks_more(amp: Amp11Context) -> None:
    """A page holds at most page_size rows, and a cursor is present exactly while rows remain."""
    amp.need_verb("amp.export")
    for channel in amp.channels:
        scope, ids = _seed(amp, channel, 5)
        cursor: str | None = None
        seen = 0
        for _ in range(MAX_PAGES):
            arguments: dict[str, Any] = {"scope": scope, "page_size": 2}
            if cursor:
                arguments["cursor"] = cursor
            rows, value = amp.export_rows(arguments, on=channel)
            amp.expect(len(rows) <= 2, f"over {channel}: page_size 2 answered {len(rows)} rows", rows)
            seen += len(rows)
            cursor = value.get("next_cursor")
            if seen < len(ids):
                amp.expect(cursor, f"over {channel}: no cursor after {seen} of {len(ids)} rows", rows)
            else:
                amp.expect(not cursor, f"over {channel}: a cursor after the last row", rows)
            if not cursor:
                break


@check("AMP11-EXP-05")
def test_cursors_visit_every_row_once(amp: Amp11Context) -> None:
    """Following the cursors visits every row exactly once."""
    amp.need_verb("amp.export")
    for channel in amp.channels:
        scope, ids = _seed(amp, channel, 5)
        visited: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            arguments: dict[str, Any] = {"scope": scope, "page_size": 2}
            if cursor:
                arguments["cursor"] = cursor
            rows, value = amp.export_rows(arguments, on=channel)
            visited += [r.get("id") for r in rows if isinstance(r, dict)]
            cursor = value.get("next_cursor")
            if not cursor:
                break
        for memory_id in ids:
            times = visited.count(memory_id)
            amp.expect(times == 1, f"over {channel}: row {memory_id} visited {times} times", rows)
        amp.expect(
            len(visited) == len(ids), f"over {channel}: {len(visited)} rows for {len(ids)} memories", rows
        )


@check("AMP11-EXP-06")
def test_forged_cursor_and_bad_page_size_are_refused(amp: Amp11Context) -> None:
    """A malformed cursor or a page_size below 1 is refused with invalid_request."""
    amp.need_verb("amp.export")
    for channel in amp.channels:
        scope, _ = _seed(amp, channel, 1)
        for what, extra in (
            ("a forged cursor", {"cursor": "not-a-real-cursor"}),
            ("page_size 0", {"page_size": 0}),
        ):
            result = amp.call("amp.export", {"scope": scope, **extra}, on=channel)
            amp.full_verb_answer(result)
            amp.expect_error(result, "invalid_request", f"export with {what}")


@check("AMP11-EXP-07")
def test_export_honours_status_filter(amp: Amp11Context) -> None:
    """amp.export honours filters.status."""
    amp.need_verb("amp.export")
    amp.need_verb("amp.pin")
    for channel in amp.channels:
        scope, ids = _seed(amp, channel, 2)
        amp.ok("amp.pin", {"scope": scope, "id": ids[0]}, on=channel, what="pinning (precondition)")
        rows, _ = amp.export_rows({"scope": scope, "filters": {"status": "pinned"}}, on=channel)
        exported = [r.get("id") for r in rows if isinstance(r, dict)]
        amp.expect(exported == [ids[0]], f"over {channel}: a pinned-only export emitted {exported}", _)


# -- import ----------------------------------------------------------------------------------------


@check("AMP11-IMP-01")
def test_import_of_an_empty_document(amp: Amp11Context) -> None:
    """An empty document imports as zero counts (REST may answer invalid_request; conflict C8)."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        result = _import(amp, channel, amp.scope(), "")
        amp.full_verb_answer(result)
        if not result.ok:
            amp.expect_error(result, "invalid_request", "import of an empty document")
            amp.note(f"over {channel}: an empty document is refused (conflict C8)")
            continue
        counts = _counts(result.value or {})
        amp.expect(counts == (0, 0, 0), f"over {channel}: counts {counts}", result)


@check("AMP11-IMP-02")
def test_export_import_round_trip_between_scopes(amp: Amp11Context) -> None:
    """Rows exported from scope A, rescoped to B and imported into B land complete and recallable."""
    amp.need_verb("amp.export")
    amp.need_verb("amp.import")
    for channel in amp.channels:
        source, target = amp.scope("source"), amp.scope("target")
        token = amp.token()
        metadata = {"amp.entities": ["espresso"], "origin": "round trip"}
        for number in range(3):
            amp.encode(source, f"round trip {number} {token} ☕", on=channel, metadata=metadata)
        rows, _ = amp.export_rows({"scope": source}, on=channel)
        amp.expect(len(rows) == 3, f"over {channel}: exported {len(rows)} of 3 rows", rows)
        moved = [{**r, "scope": target} for r in rows if isinstance(r, dict)]
        value = _imported(amp, channel, target, ndjson(*moved))
        amp.expect(
            _counts(value)[0] == 3 and value.get("failed") == 0, f"over {channel}: import {value}", value
        )
        for moved_row in moved:
            amp.session.remember(channel, {"scope": target, "id": moved_row["id"]})
        landed = {r.get("content"): r for r in amp.recall(target, token, on=channel)}
        for original in moved:
            found = landed.get(original["content"])
            amp.expect(
                found is not None, f"over {channel}: {shown(original['content'])} is not recalled in B", found
            )
            assert found is not None
            got = found.get("metadata") or {}
            amp.expect(
                all(got.get(k) == v for k, v in metadata.items()),
                f"over {channel}: metadata now {got}",
                found,
            )
            amp.expect(
                found.get("status") == original.get("status"), f"over {channel}: status changed", found
            )


@check("AMP11-IMP-03")
def test_skip_policy_is_idempotent(amp: Amp11Context) -> None:
    """on_conflict skip (the default) counts a re-imported id as skipped and keeps the stored row."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        first = row(scope, f"first version {token}")
        second = {**first, "content": f"second version {token}"}
        amp.session.remember(channel, {"scope": scope, "id": first["id"]})
        value = _imported(amp, channel, scope, ndjson(first))
        amp.expect(_counts(value) == (1, 0, 0), f"over {channel}: first import {value}", value)
        for policies in ({}, {"on_conflict": "skip"}):
            value = _imported(amp, channel, scope, ndjson(second), **policies)
            amp.expect(
                _counts(value) == (0, 1, 0),
                f"over {channel}: re-import {policies or 'default'} {value}",
                value,
            )
        contents = [r.get("content") for r in amp.recall(scope, token, on=channel)]
        amp.expect(
            contents == [first["content"]], f"over {channel}: stored content now {contents}", amp.latest
        )


@check("AMP11-IMP-04")
def test_overwrite_policy_replaces(amp: Amp11Context) -> None:
    """on_conflict overwrite replaces the stored row with the incoming one."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        first = row(scope, f"version one {token}")
        second = {**first, "content": f"version two {token}"}
        amp.session.remember(channel, {"scope": scope, "id": first["id"]})
        _imported(amp, channel, scope, ndjson(first))
        value = _imported(amp, channel, scope, ndjson(second), on_conflict="overwrite")
        amp.expect(_counts(value) == (1, 0, 0), f"over {channel}: overwrite counted {value}", value)
        contents = [r.get("content") for r in amp.recall(scope, token, on=channel)]
        amp.expect(
            contents == [second["content"]], f"over {channel}: content after overwrite {contents}", amp.latest
        )


def _only_error(amp: Amp11Context, channel: str, value: dict[str, Any], line: int) -> None:
    errors = value.get("errors")
    amp.expect(
        isinstance(errors, list) and errors, f"over {channel}: no `errors` list for a failed row", value
    )
    assert isinstance(errors, list)
    first = errors[0] if isinstance(errors[0], dict) else {}
    code = first.get("amp_error_code")
    amp.expect(code == "invalid_request", f"over {channel}: the failed row's code is {shown(code)}", value)
    amp.expect(
        first.get("line") == line,
        f"over {channel}: failed line reported as {shown(first.get('line'))}",
        value,
    )


@check("AMP11-IMP-05")
def test_row_of_another_scope_fails_in_both_remap_modes(amp: Amp11Context) -> None:
    """A row whose scope conflicts with the request scope fails (invalid_request) and is stored nowhere."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        claimed, request = amp.scope("claimed"), amp.scope("request")
        token = amp.token()
        for remap in ("strict", "inherit"):
            intruder = row(claimed, f"wrong scope {remap} {token}")
            value = _imported(amp, channel, request, ndjson(intruder), scope_remap=remap)
            amp.expect(_counts(value) == (0, 0, 1), f"over {channel}: {remap} counted {value}", value)
            _only_error(amp, channel, value, 1)
        for scope in (claimed, request):
            stored = amp.recall(scope, token, on=channel)
            amp.expect(not stored, f"over {channel}: the refused row was stored under {scope}", stored)


@check("AMP11-IMP-06")
def test_strict_remap_fails_rows_missing_a_key(amp: Amp11Context) -> None:
    """scope_remap strict (the default) fails a row lacking an identity key of the request scope."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        agent_scope = amp.scope()
        request = {**agent_scope, "user_id": amp.session.unique("user")}
        for policies in ({}, {"scope_remap": "strict"}):
            partial = row(agent_scope, f"partial scope {amp.token()}")
            value = _imported(amp, channel, request, ndjson(partial), **policies)
            amp.expect(
                _counts(value) == (0, 0, 1), f"over {channel}: {policies or 'default'} counted {value}", value
            )
            _only_error(amp, channel, value, 1)


@check("AMP11-IMP-07")
def test_inherit_remap_fills_missing_keys(amp: Amp11Context) -> None:
    """scope_remap inherit imports the row under the full request scope."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        agent_scope = amp.scope()
        request = {**agent_scope, "user_id": amp.session.unique("user")}
        token = amp.token()
        partial = row(agent_scope, f"inherited scope {token}")
        amp.session.remember(channel, {"scope": request, "id": partial["id"]})
        value = _imported(amp, channel, request, ndjson(partial), scope_remap="inherit")
        amp.expect(_counts(value) == (1, 0, 0), f"over {channel}: inherit counted {value}", value)
        found = amp.find(request, partial["id"], token, on=channel)
        amp.expect(
            found is not None, f"over {channel}: the inherited row is not under the request scope", found
        )
        assert found is not None
        amp.expect(found.get("scope") == request, f"over {channel}: its scope is {found.get('scope')}", found)


@check("AMP11-IMP-08")
def test_bad_lines_fail_alone(amp: Amp11Context) -> None:
    """A malformed or schema-invalid line fails with its 1-based line number; the other lines import."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        scope = amp.scope()
        for bad in ("this is not json", json.dumps({"id": "x", "content": 42})):
            good = row(scope, f"good line {amp.token()}")
            amp.session.remember(channel, {"scope": scope, "id": good["id"]})
            value = _imported(amp, channel, scope, ndjson(good, bad))
            amp.expect(_counts(value) == (1, 0, 1), f"over {channel}: counts {value} for good + bad", value)
            _only_error(amp, channel, value, 2)


@check("AMP11-IMP-09")
def test_fail_fast_stops_without_rollback(amp: Amp11Context) -> None:
    """on_conflict fail_fast keeps rows before the first failure and processes none after it."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        first, third = row(scope, f"fast one {token}"), row(scope, f"fast three {token}")
        for memory in (first, third):
            amp.session.remember(channel, {"scope": scope, "id": memory["id"]})
        value = _imported(amp, channel, scope, ndjson(first, "not json", third), on_conflict="fail_fast")
        amp.expect(_counts(value) == (1, 0, 1), f"over {channel}: fail_fast counted {value}", value)
        ids = {r.get("id") for r in amp.recall(scope, token, on=channel)}
        amp.expect(first["id"] in ids, f"over {channel}: fail_fast rolled back the first row", amp.latest)
        amp.expect(
            third["id"] not in ids, f"over {channel}: fail_fast processed a row after the failure", amp.latest
        )


@check("AMP11-IMP-10")
def test_fail_atomic_rolls_back_or_is_not_supported(amp: Amp11Context) -> None:
    """on_conflict fail_atomic rolls everything back on a failure, or answers not_supported."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        probe = row(scope, f"atomic probe {token}")
        amp.session.remember(channel, {"scope": scope, "id": probe["id"]})
        _imported(amp, channel, scope, ndjson(probe))  # import works at all (else: skip)
        good = row(scope, f"atomic {token}")
        amp.session.remember(channel, {"scope": scope, "id": good["id"]})
        result = _import(amp, channel, scope, ndjson(good, "not json"), on_conflict="fail_atomic")
        if result.error_code == "not_supported":
            amp.note(f"over {channel}: fail_atomic is not supported (a non-transactional backend)")
            continue
        amp.expect(result.ok, f"fail_atomic: {result.describe()}", result)
        value = result.value or {}
        amp.expect(value.get("imported") == 0, f"over {channel}: fail_atomic counted {value}", result)
        stored = [r for r in amp.recall(scope, token, on=channel) if r.get("id") == good["id"]]
        amp.expect(not stored, f"over {channel}: fail_atomic kept a row of a failed import", amp.latest)
        amp.note(f"over {channel}: fail_atomic rolled back")


@check("AMP11-IMP-11")
def test_unknown_policies_are_refused(amp: Amp11Context) -> None:
    """An unknown on_conflict or scope_remap value is refused with invalid_request."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        scope = amp.scope()
        document = ndjson(row(scope, "never imported"))
        for policy in ({"on_conflict": "lolwhat"}, {"scope_remap": "sideways"}):
            result = _import(amp, channel, scope, document, **policy)
            amp.full_verb_answer(result)
            amp.expect_error(result, "invalid_request", f"import with {policy}")


@check("AMP11-IMP-12")
def test_import_counts_add_up(amp: Amp11Context) -> None:
    """imported + skipped + failed equals the lines processed, and errors lists each failed line."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        scope = amp.scope()
        existing = row(scope, f"existing {amp.token()}")
        fresh = row(scope, f"fresh {amp.token()}")
        for memory in (existing, fresh):
            amp.session.remember(channel, {"scope": scope, "id": memory["id"]})
        _imported(amp, channel, scope, ndjson(existing))
        value = _imported(amp, channel, scope, ndjson(existing, fresh, "{broken", "[1, 2]"))
        total = sum(v for v in _counts(value) if isinstance(v, int))
        amp.expect(total == 4, f"over {channel}: counts {value} for 4 lines", value)
        amp.expect(_counts(value) == (1, 1, 2), f"over {channel}: counts {value}", value)
        lines = [e.get("line") for e in value.get("errors") or [] if isinstance(e, dict)]
        amp.expect(
            sorted(lines, key=repr) == [3, 4], f"over {channel}: errors name lines {lines}, not [3, 4]", value
        )


@check("AMP11-IMP-13")
def test_imported_rows_keep_id_status_and_time(amp: Amp11Context) -> None:
    """Imported rows keep their MXF id, status (pinned stays pinned) and timestamp."""
    amp.need_verb("amp.import")
    for channel in amp.channels:
        scope = amp.scope()
        token = amp.token()
        pinned = row(scope, f"pinned import {token}", status="pinned", timestamp="2025-01-02T03:04:05Z")
        amp.session.remember(channel, {"scope": scope, "id": pinned["id"]})
        _imported(amp, channel, scope, ndjson(pinned))
        found = next(
            (r for r in amp.recall(scope, token, on=channel) if r.get("content") == pinned["content"]), None
        )
        amp.expect(found is not None, f"over {channel}: the imported row is not recalled", found)
        assert found is not None
        amp.expect(
            found.get("id") == pinned["id"], f"over {channel}: id became {shown(found.get('id'))}", found
        )
        amp.expect(
            found.get("status") == "pinned",
            f"over {channel}: status became {shown(found.get('status'))}",
            found,
        )
        stamp = str(found.get("timestamp", ""))
        amp.expect(
            stamp.startswith("2025-01-02T03:04:05"), f"over {channel}: timestamp became {shown(stamp)}", found
        )
