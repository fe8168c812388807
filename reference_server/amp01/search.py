"""Semantic search: rank one owner's cells by 0.7 x similarity + 0.3 x current decay score.

Only the requested owner's shard is scanned, using its packed vector index (see ``embedding``).
Ties keep creation order (ids are monotonic), so the ranking is deterministic. ``offset`` and
``limit`` count only cells the caller may read, so page n is page n of the caller's own view.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Collection, Iterable, Iterator
from datetime import datetime
from operator import itemgetter
from typing import Any

from reference_server.amp01.access import AccessControl, folded_id
from reference_server.amp01.embedding import SCALE, embed
from reference_server.amp01.faults import Faults
from reference_server.amp01.lifecycle import SECONDS_PER_DAY
from reference_server.amp01.store import OwnerShard, Record, Store

SIMILARITY_WEIGHT = 0.7
DECAY_WEIGHT = 0.3
_DOT_SCALE = float(SCALE * SCALE)


def _shard_scores(
    shard: OwnerShard,
    vector: dict[int, int],
    statuses: Collection[str],
    types: Collection[str] | None,
    now_ts: float,
    similarity_factor: float,
    decay_weight: float,
) -> list[tuple[float, int]]:
    """(score, slot) of every cell of one shard that passes the filters.

    Written as comprehensions over the shard's parallel lists: this loop is the whole cost of a
    search, and a comprehension over ``zip`` is several times faster than an indexed ``for`` loop.
    """
    count = len(shard.records)
    dots = shard.index.dot_products(vector) if vector else [0] * count
    exp = math.exp
    per_day = 1.0 / SECONDS_PER_DAY
    # A decay anchor in the future (the clock was set back) counts as age 0, like decay_score does.
    now_ts = max(now_ts, max(shard.anchor, default=now_ts))
    rows = zip(dots, shard.status, shard.weight, shard.rate, shard.anchor, strict=True)
    if types is None:
        return [
            (similarity_factor * dot + decay_weight * weight * exp(rate * (anchor - now_ts) * per_day), slot)
            for slot, (dot, status, weight, rate, anchor) in enumerate(rows)
            if status in statuses
        ]
    return [
        (similarity_factor * dot + decay_weight * weight * exp(rate * (anchor - now_ts) * per_day), slot)
        for slot, ((dot, status, weight, rate, anchor), kind) in enumerate(zip(rows, shard.kind, strict=True))
        if status in statuses and kind in types
    ]


def rank(
    shards: list[OwnerShard],
    query: str,
    statuses: Collection[str],
    types: Collection[str] | None,
    now: datetime,
    *,
    use_decay: bool = True,
) -> Iterator[tuple[float, Record]]:
    """Every cell of ``shards`` passing the status/type filters, best first. Caller holds the lock
    while iterating (records are looked up lazily, so a first page costs one sort, not 10k lookups)."""
    vector = embed(query)
    similarity_factor = (SIMILARITY_WEIGHT if use_decay else 1.0) / _DOT_SCALE
    decay_weight = DECAY_WEIGHT if use_decay else 0.0
    now_ts = now.timestamp()
    if len(shards) == 1:
        return _ordered(
            shards[0],
            _shard_scores(shards[0], vector, statuses, types, now_ts, similarity_factor, decay_weight),
        )
    scored: list[tuple[float, int, int]] = []
    for number, shard in enumerate(shards):
        rows = _shard_scores(shard, vector, statuses, types, now_ts, similarity_factor, decay_weight)
        scored.extend((score, number, slot) for score, slot in rows)
    # Stable sort: equal scores keep shard and slot (= creation = id) order.
    scored.sort(key=itemgetter(0), reverse=True)
    return (
        (score, record)
        for score, number, slot in scored
        if (record := shards[number].records[slot]) is not None
    )


def _ordered(shard: OwnerShard, rows: list[tuple[float, int]]) -> Iterator[tuple[float, Record]]:
    """Rows best first. The first page usually needs a handful of rows, so start with a partial
    selection (``heapq.nlargest`` is documented equal to ``sorted(...)[:n]``, ties included) and sort
    everything only if the caller reads past it (cells it may not read, deep offsets)."""
    records = shard.records
    first = min(len(rows), 64)
    head = heapq.nlargest(first, rows, key=itemgetter(0)) if first < len(rows) else None
    if head is not None:
        for score, slot in head:
            record = records[slot]
            if record is not None:
                yield score, record
    rows.sort(key=itemgetter(0), reverse=True)  # stable: ties keep slot (= id) order
    for score, slot in rows if head is None else rows[first:]:
        record = records[slot]
        if record is not None:
            yield score, record


def search(
    store: Store,
    access: AccessControl,
    faults: Faults,
    now: datetime,
    agent: str,
    *,
    query: str,
    owner_id: str,
    types: Collection[str] | None,
    statuses: Collection[str],
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], bool]:
    """One page of results (stored cell dicts, not to be mutated) and whether another page exists."""
    with store.lock:
        if faults.on("search-ignores-owner"):
            shards = store.shards()
        else:
            shard = store.shard(owner_id)
            shards = [shard] if shard is not None else []
            if faults.on("owner-filter-folded"):
                folded = folded_id(owner_id)
                shards = [found for owner, found in store.owned_shards() if folded_id(owner) == folded]
        if faults.on("search-ignores-types"):
            types = None
        ranked = rank(shards, query, statuses, types, now, use_decay=not faults.on("ranking-ignores-decay"))
        if faults.on("search-approximate-index"):
            ranked = _approximate(ranked)
        if faults.on("search-index-drops-beyond-n"):
            ranked = _index_limited(ranked, shards)
        check_acl = not faults.on("search-ignores-readable-by")
        if faults.on("search-offset-before-acl"):
            ranked = itertools.islice(ranked, offset, None)
            offset = 0
        results: list[dict[str, Any]] = []
        skipped = 0
        has_more = False
        for _score, record in ranked:
            if check_acl and not access.can_read(record.cell, agent):
                continue
            if skipped < offset:
                skipped += 1
                continue
            if len(results) == limit:
                has_more = True
                break
            results.append(record.cell)
    return results, has_more


INDEX_LIMIT = 100
"""``search-index-drops-beyond-n``: how many cells of one owner the index holds."""


def _index_limited(
    ranked: Iterable[tuple[float, Record]], shards: list[OwnerShard]
) -> Iterator[tuple[float, Record]]:
    """``search-index-drops-beyond-n``: an index built for small stores that stops taking cells once an
    owner has :data:`INDEX_LIMIT` (a capacity a vector database is configured with): the cells created
    after them are stored, listed and readable, but search never finds them."""
    lost = {
        id(record)
        for shard in shards
        if len(shard.records) > INDEX_LIMIT
        for record in shard.records[INDEX_LIMIT:]
        if record is not None
    }
    return ((score, record) for score, record in ranked if id(record) not in lost)


APPROXIMATE_DUPLICATES = 4
"""``search-approximate-index``: how many cells of one identical text the index still finds."""


def _approximate(ranked: Iterable[tuple[float, Record]]) -> Iterator[tuple[float, Record]]:
    """``search-approximate-index``: an approximate nearest-neighbour index that loses exact
    duplicates (a graph index links few of many identical vectors): past the first
    :data:`APPROXIMATE_DUPLICATES` cells of one text, the others are silently not found."""
    seen: dict[str, int] = {}
    for score, record in ranked:
        content = record.cell.get("content")
        text = content.get("text") if isinstance(content, dict) else None
        key = text if isinstance(text, str) else ""
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= APPROXIMATE_DUPLICATES:
            yield score, record
