"""The memory verbs (spec §3.2, §3.3, and the v1.2-draft update/batch_encode) as functions over a Context.

Each takes validated top-level arguments and returns the verb's result object, or raises ``AmpError``.
Recall is a plain lexical search: the score of a memory is the share of the query's words found in its
content (case-insensitive substrings), so results are deterministic and need no model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from reference_server.amp11.context import Context
from reference_server.amp11.errors import AmpError, invalid
from reference_server.amp11.filters import parse_filters
from reference_server.amp11.metadata import check_metadata, merge_patch
from reference_server.amp11.scope import ISOLATING_KEYS, Scope, matches
from reference_server.amp11.store import Memory, format_timestamp

DEFAULT_SOURCE = "user_stated"
BATCH_SOURCES = ("user_stated", "inferred", "external", "direct", "imported", "system")
MAX_BATCH = 1000
MIN_SALIENT_CHARS = 3  # below this (without force) an encode is below_threshold


def _mangle(text: str) -> str:
    """The ``unicode-mangled`` fault: what a UCS-2 backend does to astral characters."""
    return "".join(char if ord(char) <= 0xFFFF else "\ufffd" for char in text)


def _content(ctx: Context, value: str, where: str = "content") -> str:
    if not value.strip():
        raise invalid(f"{where} must not be blank")
    return _mangle(value) if ctx.on("unicode-mangled") else value


def _metadata(ctx: Context, value: Any, where: str = "metadata") -> dict[str, Any]:
    bag = dict(check_metadata(value, where=where))
    if ctx.on("metadata-dropped"):
        bag = {key: item for key, item in bag.items() if key.startswith("amp.")}
    if ctx.on("reserved-metadata-stringified"):
        bag = {
            k: json.dumps(v) if k.startswith("amp.") and not isinstance(v, str) else v for k, v in bag.items()
        }
    return bag


def _store_memory(
    ctx: Context,
    scope: Scope,
    content: str,
    *,
    source: str,
    force: bool,
    metadata: dict[str, Any],
    visibility: str,
) -> dict[str, Any]:
    """Salience gate, duplicate check, then a new row; the core of encode and batch_encode."""
    if not force and len(content.strip()) < MIN_SALIENT_CHARS:
        return {"status": "below_threshold"}
    if not force:
        for _, memory in ctx.store.rows():
            if memory.scope == scope and memory.content == content and memory.status != "archived":
                return {"id": memory.id, "status": "duplicate"}
    now = ctx.store.now()
    memory = Memory(
        id=ctx.store.new_id(),
        content=content,
        scope=dict(scope),
        source=source,
        timestamp=format_timestamp(now),
        created=now,
        metadata=metadata,
        visibility=visibility,
    )
    ctx.store.add(memory)
    return {"id": memory.id, "status": "stored"}


def encode(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    scope = ctx.scope(args)
    if "private" in args and ctx.on("legacy-private-refused"):
        raise invalid("private is not supported; use scope")
    content = _content(ctx, args["content"])
    metadata = _metadata(ctx, args.get("metadata", {}))
    visibility = "private" if args.get("private") else "shared"
    out = _store_memory(
        ctx,
        scope,
        content,
        source=DEFAULT_SOURCE if ctx.on("source-label-overwritten") else args.get("source", DEFAULT_SOURCE),
        force=args.get("force", False),
        metadata=metadata,
        visibility=visibility,
    )
    if "private" in args and "scope" not in args:  # a v1.0 caller: echo the deprecated field (spec §5.4)
        out["visibility"] = visibility
    return out


class Relevance:
    """The score of contents against one query: the share of the query's words each contains
    (case-insensitive substrings); a wordless query (emoji only) must appear whole."""

    def __init__(self, query: str) -> None:
        self.phrase = query.strip().lower()
        self.words = set(re.findall(r"\w+", self.phrase))

    def __call__(self, content: str) -> float:
        haystack = content.lower()
        if not self.words:
            return 1.0 if self.phrase in haystack else 0.0
        return round(sum(1 for word in self.words if word in haystack) / len(self.words), 4)


def recall(ctx: Context, args: Mapping[str, Any], *, legacy: bool = False) -> dict[str, Any]:
    scope = ctx.scope(args)
    if not args["query"].strip():
        raise invalid("query must not be blank")
    if ctx.on("recall-ignores-refining-keys"):
        scope = {key: value for key, value in scope.items() if key in ISOLATING_KEYS}
    filters = parse_filters(args.get("filters"))
    if filters.mentions_visibility and ctx.on("visibility-filter-refused"):
        raise invalid("filters.visibility is not supported; use scope")
    if ctx.on("status-filter-ignored"):
        filters = replace(filters, status=None)
    if ctx.on("timestamp-filters-ignored"):
        filters = replace(filters, after=None, before=None)
    defaults: tuple[str, ...] = ("active", "pinned")
    if ctx.on("archived-in-default-recall"):
        defaults = ("active", "pinned", "archived")
    every_scope = ctx.on("recall-scope-leak")
    strict = not ctx.on("scope-not-strict-and")
    relevance_of = Relevance(args["query"])
    scored = []
    for _, memory in ctx.store.rows():
        if not (every_scope or matches(memory.scope, scope, strict=strict)):
            continue
        if not filters.keep(memory, default_statuses=defaults):
            continue
        relevance = relevance_of(memory.content)
        if relevance > 0:
            scored.append((relevance, memory))
    scored.sort(key=lambda pair: (-pair[0], -pair[1].created.timestamp(), pair[1].id))
    if ctx.on("recall-unsorted"):
        scored.reverse()
    if not ctx.on("top-k-ignored"):
        scored = scored[: args.get("top_k", 10)]
    echo = legacy or filters.mentions_visibility
    return {"results": [memory.result(score=relevance, with_visibility=echo) for relevance, memory in scored]}


def _targets(ctx: Context, memory_id: str, scope: Scope, ignore_scope: bool) -> list[tuple[int, Memory]]:
    return [
        (row, memory)
        for row, memory in ctx.store.find(memory_id)
        if ignore_scope or ctx.match(memory.scope, scope)
    ]


def forget(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    scope = ctx.scope(args)
    targets = _targets(ctx, args["id"], scope, ctx.on("forget-ignores-scope"))
    if not targets:
        return ctx.not_found(args["id"])
    for row, memory in targets:
        if ctx.on("forget-archives"):
            memory.status = "archived"
        else:
            ctx.store.remove(row)
    return {"status": "forgotten"}


def pin(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    scope = ctx.scope(args)
    targets = _targets(ctx, args["id"], scope, ctx.on("pin-ignores-scope"))
    if not targets:
        return ctx.not_found(args["id"])
    if not ctx.on("pin-not-persisted"):
        for _, memory in targets:
            memory.status = "pinned"
    return {"status": "pinned"}


def consolidate(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    """Archive memories superseded by an older one with the same content and scope; ``full`` also
    archives memories whose ``amp.ttl`` has run out. Pinned memories are never archived."""
    scope = ctx.scope(args)
    every_scope = ctx.on("consolidate-ignores-scope")
    live = sorted(
        (
            m
            for _, m in ctx.store.rows()
            if m.status != "archived" and (every_scope or ctx.match(m.scope, scope))
        ),
        key=Memory.order_key,
    )
    protect = not ctx.on("pin-not-protecting")
    now = ctx.store.now()
    kept: set[tuple[str, frozenset[tuple[str, str]]]] = set()
    for memory in live:
        key = (" ".join(memory.content.lower().split()), frozenset(memory.scope.items()))
        superseded = key in kept
        kept.add(key)
        ttl = memory.metadata.get("amp.ttl")
        expired = (
            args.get("depth", "full") == "full"
            and isinstance(ttl, int)
            and (now - memory.created).total_seconds() >= ttl
        )
        if (superseded or expired) and not (protect and memory.status == "pinned"):
            memory.status = "archived"
        elif memory.status == "pinned" and not protect:
            memory.status = "active"
        memory.consolidated = True
    ctx.store.last_consolidation = now
    return {"status": "ok", "memories_processed": len(live)}


def stats(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    scope = ctx.scope(args)
    every_scope = ctx.on("stats-counts-other-scopes")
    rows = [m for _, m in ctx.store.rows() if every_scope or ctx.match(m.scope, scope)]
    live = [m for m in rows if m.status in ("active", "pinned")]
    count = len(live)
    if ctx.on("stats-ignores-forget"):
        count += sum(1 for m in ctx.store.tombstones if ctx.match(m.scope, scope))
    metadata: dict[str, Any] = {
        "pinned_count": sum(1 for m in rows if m.status == "pinned"),
        "archived_count": sum(1 for m in rows if m.status == "archived"),
        "content_bytes": sum(len(m.content.encode()) for m in live),
    }
    if ctx.store.last_consolidation is not None:
        metadata["last_consolidation_time"] = format_timestamp(ctx.store.last_consolidation)
    return {
        "memory_count": count,
        "unconsolidated_count": sum(1 for m in live if not m.consolidated),
        "metadata": metadata,
    }


def update(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    """v1.2-draft: merge (RFC 7396) or replace the metadata, and/or replace the content, keeping the id."""
    scope = ctx.scope(args)
    content = _content(ctx, args["content"]) if "content" in args else None
    patch = args.get("metadata")
    if patch is not None and not isinstance(patch, dict):
        raise invalid("metadata must be an object")
    targets = _targets(ctx, args["id"], scope, False)
    if not targets:
        return ctx.not_found(args["id"])
    changed = False
    for _, memory in targets:
        metadata = memory.metadata
        if patch is not None:
            merged = merge_patch(metadata, patch) if args.get("metadata_mode", "merge") == "merge" else patch
            metadata = _metadata(ctx, merged)
        new_content = memory.content if content is None else content
        if new_content != memory.content or metadata != memory.metadata:
            memory.content, memory.metadata, memory.consolidated = new_content, metadata, False
            changed = True
    return {"status": "updated" if changed else "no_change", "id": args["id"]}


_ROW_KEYS = frozenset({"content", "source", "force", "metadata"})


def _batch_row(ctx: Context, scope: Scope, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise invalid("an entry must be an object")
    extra = sorted(set(entry) - _ROW_KEYS)
    if extra:
        raise invalid(f"entry key(s) not allowed: {', '.join(map(repr, extra))}")
    content = entry.get("content")
    if not isinstance(content, str):
        raise invalid("content must be a string")
    force = entry.get("force", False)
    if not isinstance(force, bool):
        raise invalid("force must be a JSON boolean")
    source = entry.get("source", DEFAULT_SOURCE)
    if source not in BATCH_SOURCES:
        raise invalid(f"source must be one of {', '.join(BATCH_SOURCES)}")
    return _store_memory(
        ctx,
        scope,
        _content(ctx, content),
        source=source,
        force=force,
        metadata=_metadata(ctx, entry.get("metadata", {})),
        visibility="shared",
    )


def batch_encode(ctx: Context, args: Mapping[str, Any]) -> dict[str, Any]:
    """v1.2-draft: one result per entry, in order; a bad entry fails alone (status invalid_request)."""
    scope = ctx.scope(args)
    entries = args.get("entries", args.get("memories"))
    if not isinstance(entries, list):
        raise invalid("entries must be an array")
    if len(entries) > MAX_BATCH:
        raise invalid(f"entries has {len(entries)} rows; maxItems is {MAX_BATCH}")
    results = []
    for entry in entries:
        try:
            results.append(_batch_row(ctx, scope, entry))
        except AmpError as exc:
            results.append({"status": exc.code, "message": exc.message})
    out: dict[str, Any] = {"results": results}
    if results:
        count = {
            name: sum(1 for r in results if r["status"] == name)
            for name in ("stored", "duplicate", "below_threshold")
        }
        out["summary"] = {**count, "failed": len(results) - sum(count.values())}
    return out
