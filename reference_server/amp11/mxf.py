"""MXF, the Memory Exchange Format (spec §3.3.4, §3.3.5, Appendix A): export pages and import policies.

Export emits ``MemoryResult`` rows in ascending (timestamp, id) order. The cursor is an opaque token
naming the last row emitted, so a resumed export never repeats a row even when rows were written between
pages. Import applies one row per NDJSON line under the ``on_conflict`` policy (``fail_atomic`` rolls
back, which this store can do) and the ``scope_remap`` policy.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from reference_server.amp11 import wire
from reference_server.amp11.context import Context
from reference_server.amp11.errors import AmpError, ErrorCode, invalid
from reference_server.amp11.filters import parse_filters
from reference_server.amp11.metadata import check_metadata
from reference_server.amp11.scope import Scope, check_scope
from reference_server.amp11.store import RFC3339, STATUSES, Memory, format_timestamp, parse_timestamp

MCP_PAGE_ROWS = 500  # the MCP channel's own cap when page_size is absent
MCP_PAGE_BYTES = 8 * 1024 * 1024  # below the spec's recommended 10 MiB ceiling
MAX_ERRORS = 100
IMPORTED_SOURCE = "external"


@dataclass(frozen=True)
class Page:
    rows: list[dict[str, Any]]
    next_cursor: str | None

    def ndjson(self) -> str:
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in self.rows)


def encode_cursor(position: tuple[datetime, str]) -> str:
    raw = json.dumps({"v": 1, "after": [position[0].isoformat(), position[1]]}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(ctx: Context, token: str) -> tuple[datetime, str]:
    try:
        padded = token + "=" * (-len(token) % 4)
        body = json.loads(base64.urlsafe_b64decode(padded.encode()).decode())
        moment, memory_id = body["after"]
        position = datetime.fromisoformat(moment), str(memory_id)
        if body["v"] != 1 or position[0].tzinfo is None:
            raise ValueError("not a cursor of this server")
    except (ValueError, TypeError, KeyError, binascii.Error, UnicodeDecodeError) as exc:
        code: ErrorCode = "backend_error" if ctx.on("bad-cursor-backend-error") else "invalid_request"
        raise AmpError(code, "cursor is not a continuation token issued by this server") from exc
    return position


def export_page(ctx: Context, args: Mapping[str, Any], *, default_rows: int | None) -> Page:
    """One page of the export; ``default_rows`` is the cap applied when the caller sent no page_size."""
    scope = ctx.scope(args)
    every_scope = ctx.on("export-scope-leak")
    filters = parse_filters(args.get("filters"))
    rows = sorted(
        (
            m
            for _, m in ctx.store.rows()
            if (every_scope or ctx.match(m.scope, scope)) and filters.keep(m, default_statuses=STATUSES)
        ),
        key=Memory.order_key,
    )
    if "cursor" in args:
        after = decode_cursor(ctx, args["cursor"])
        rows = [m for m in rows if m.order_key() > after]
        if ctx.on("export-cursor-skips"):
            rows = rows[1:]
    limit = args.get("page_size", default_rows)
    if ctx.on("export-page-size-exceeded"):
        limit = default_rows
    page: list[Memory] = []
    size = 0
    for memory in rows if limit is None else rows[:limit]:
        size += len(json.dumps(memory.result(score=0.0), ensure_ascii=False).encode()) + 1
        if page and default_rows is not None and size > MCP_PAGE_BYTES:
            break
        page.append(memory)
    more = len(page) < len(rows)
    return Page(
        [m.result(score=0.0) for m in page], encode_cursor(page[-1].order_key()) if more and page else None
    )


def export(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    """The MCP shape: the page inline as ``ndjson``, its ``count`` and, if more remain, ``next_cursor``."""
    page = export_page(ctx, args, default_rows=MCP_PAGE_ROWS)
    out: dict[str, Any] = {"ndjson": page.ndjson(), "count": len(page.rows)}
    if page.next_cursor:
        out["next_cursor"] = page.next_cursor
    return out


def _row_scope(ctx: Context, row: dict[str, Any], scope: Scope, remap: str) -> Scope:
    own = check_scope(row.get("scope", {}), require_isolating=False, where="row scope")
    for key, value in scope.items():
        if key in own and own[key] != value and not ctx.on("import-cross-scope-accepted"):
            raise invalid(f"row scope.{key} {own[key]!r} conflicts with the request scope's {value!r}")
    missing = [key for key in scope if key not in own]
    if missing:
        if remap == "strict" and not ctx.on("import-strict-remap-inherits"):
            raise invalid(f"row scope lacks {', '.join(missing)} (scope_remap is strict)")
        own.update({key: scope[key] for key in missing})
    return check_scope(own, where="row scope")


def _row(ctx: Context, line: str, scope: Scope, remap: str) -> Memory:
    try:
        row = wire.loads(line)
    except ValueError:
        raise invalid("line is not valid JSON") from None
    if not isinstance(row, dict):
        raise invalid("row must be a JSON object (a MemoryResult)")
    for key in ("id", "content", "timestamp", "status"):
        if not isinstance(row.get(key), str) or not row[key]:
            raise invalid(f"row {key} must be a non-empty string")
    if row["status"] not in STATUSES:
        raise invalid(f"row status must be one of {', '.join(STATUSES)}")
    created = parse_timestamp(row["timestamp"])
    if created is None:
        raise invalid("row timestamp must be an ISO 8601 date-time")
    if "score" in row and (not isinstance(row["score"], int | float) or isinstance(row["score"], bool)):
        raise invalid("row score must be a number")
    source = row.get("source", IMPORTED_SOURCE)
    if not isinstance(source, str):
        raise invalid("row source must be a string")
    metadata = check_metadata(row.get("metadata", {}), where="row metadata")
    return Memory(
        id=row["id"],
        content=row["content"],
        scope=_row_scope(ctx, row, scope, remap),
        source=source,
        timestamp=row["timestamp"] if RFC3339.fullmatch(row["timestamp"]) else format_timestamp(created),
        created=created,
        status=row["status"],
        metadata=dict(metadata),
    )


def _apply(ctx: Context, memory: Memory, on_conflict: str) -> str:
    """Store one row; ``imported`` or ``skipped``, or raise for a collision under a fail_* policy."""
    existing = [row for row, m in ctx.store.find(memory.id) if m.scope == memory.scope]
    if not existing:
        ctx.store.add(memory)
        return "imported"
    if on_conflict == "skip" and not ctx.on("import-skip-overwrites"):
        return "skipped"
    if on_conflict in ("skip", "overwrite"):
        ctx.store.replace(existing[0], memory)
        return "imported"
    raise invalid(f"id {memory.id!r} already exists in this scope")


def import_(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    scope = ctx.scope(args)
    on_conflict = args.get("on_conflict", "skip")
    remap = args.get("scope_remap", "strict")
    snapshot = ctx.store.snapshot() if on_conflict == "fail_atomic" else None
    counts = {"imported": 0, "skipped": 0, "failed": 0}
    errors: list[dict[str, Any]] = []
    first_line = 0 if ctx.on("import-line-zero-based") else 1
    for number, line in enumerate(args["ndjson"].split("\n"), start=first_line):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            counts[_apply(ctx, _row(ctx, line, scope, remap), on_conflict)] += 1
        except AmpError as exc:
            counts["failed"] += 1
            if len(errors) < MAX_ERRORS:
                errors.append({"line": number, "amp_error_code": exc.code, "message": exc.message})
            if on_conflict == "fail_atomic":
                if snapshot is not None and not ctx.on("import-atomic-no-rollback"):
                    ctx.store.restore(snapshot)
                return {"imported": 0, "skipped": 0, "failed": 1, "errors": errors[-1:]}
            if on_conflict == "fail_fast":
                break
    out: dict[str, Any] = dict(counts)
    if errors:
        out["errors"] = errors
    return out
