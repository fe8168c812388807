"""The in-memory store: cells by id, per-owner shards with their vector index, one lock.

Stored cell dicts are treated as immutable: every change builds a new dict (copying only the
sub-objects it changes) and swaps it in under the lock. A reader that took a reference therefore
always holds one consistent version, and responses can be serialised outside the lock.
Internal fields (decay anchor, when the cell went stale or was deleted) live on the ``Record`` and
never appear in a response.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from reference_server.amp01.clock import Clock
from reference_server.amp01.embedding import Vector, VectorIndex, embed


class RetentionWindowError(Exception):
    """A purge asked for inside the retention window of the deletion; the cell is kept."""


@dataclass(eq=False, slots=True)
class Record:
    """One stored cell plus the internal state that drives the lifecycle."""

    id: str
    cell: dict[str, Any]
    owner_id: str
    created_at: datetime
    decay_anchor: datetime
    """Where the decay clock starts: created_at, then the time of the last read."""
    last_accessed_at: datetime | None = None
    last_updated_at: datetime | None = None
    stale_since: datetime | None = None
    deleted_at: datetime | None = None
    slot: int = -1

    @property
    def status(self) -> str:
        status: str = self.cell["lifecycle"]["status"]
        return status

    @property
    def text(self) -> str:
        text: str = self.cell["content"]["text"]
        return text


class OwnerShard:
    """The cells of one owner in creation order, with their packed vectors and, in parallel lists,
    the few values search needs per cell (so ranking 10k cells reads flat lists, not nested dicts)."""

    __slots__ = ("anchor", "index", "kind", "live", "rate", "records", "status", "weight")

    def __init__(self) -> None:
        self.records: list[Record | None] = []
        self.index = VectorIndex()
        self.live = 0
        self.status: list[str | None] = []
        self.kind: list[str] = []
        self.weight: list[float] = []
        """importance x confidence"""
        self.rate: list[float] = []
        self.anchor: list[float] = []
        """decay anchor, POSIX seconds"""

    def add(self, record: Record, vector: Vector) -> None:
        record.slot = len(self.records)
        self.records.append(record)
        self.status.append(None)
        self.kind.append("")
        self.weight.append(0.0)
        self.rate.append(0.0)
        self.anchor.append(0.0)
        self.sync(record)
        self.index.add(record.slot, vector)
        self.live += 1

    def sync(self, record: Record) -> None:
        """Refresh the search columns of ``record`` after any change to it."""
        slot = record.slot
        cell = record.cell
        scoring = cell["scoring"]
        self.status[slot] = cell["lifecycle"]["status"]
        self.kind[slot] = cell["type"]
        self.weight[slot] = scoring["importance"] * scoring["confidence"]
        self.rate[slot] = scoring["decay_rate"]
        self.anchor[slot] = record.decay_anchor.timestamp()

    def drop(self, record: Record, vector: Vector) -> None:
        self.index.remove(record.slot, vector)
        self.records[record.slot] = None
        self.status[record.slot] = None
        self.live -= 1


class Store:
    """Cells by id and by owner. Every method takes the lock; callers that need several steps to be
    atomic (check then write) hold ``store.lock`` themselves (it is re-entrant)."""

    def __init__(self, clock: Clock, retention_days: int) -> None:
        self.lock = threading.RLock()
        self._clock = clock
        self._retention = timedelta(days=retention_days)
        self._by_id: dict[str, Record] = {}
        self._owners: dict[str, OwnerShard] = {}

    def __len__(self) -> int:
        with self.lock:
            return len(self._by_id)

    def get(self, cell_id: str) -> Record | None:
        with self.lock:
            return self._by_id.get(cell_id)

    def insert(self, record: Record) -> None:
        vector = embed(record.text)
        with self.lock:
            if record.id in self._by_id:
                raise KeyError(f"duplicate id {record.id}")
            self._by_id[record.id] = record
            self._shard(record.owner_id).add(record, vector)

    def _shard(self, owner_id: str) -> OwnerShard:
        shard = self._owners.get(owner_id)
        if shard is None:
            shard = self._owners[owner_id] = OwnerShard()
        return shard

    def replace(self, record: Record, cell: dict[str, Any]) -> None:
        """Swap in a new version of the cell, re-indexing if its text or owner changed."""
        with self.lock:
            old = record.cell
            new_owner: str = cell["identity"]["owner_id"]
            if new_owner != record.owner_id:
                self._owners[record.owner_id].drop(record, embed(old["content"]["text"]))
                record.owner_id = new_owner
                record.cell = cell
                self._shard(new_owner).add(record, embed(cell["content"]["text"]))
                return
            shard = self._owners[record.owner_id]
            if old["content"]["text"] != cell["content"]["text"]:
                shard.index.remove(record.slot, embed(old["content"]["text"]))
                shard.index.add(record.slot, embed(cell["content"]["text"]))
            record.cell = cell
            shard.sync(record)

    def purge(self, cell_id: str) -> None:
        """Remove a deleted cell for good; refused with ``RetentionWindowError`` inside the window."""
        with self.lock:
            record = self._by_id.get(cell_id)
            if record is None:
                raise KeyError(cell_id)
            if record.status != "deleted" or record.deleted_at is None:
                raise ValueError(f"cell {cell_id} is not deleted; only deleted cells can be purged")
            now = self._clock.now()
            if now - record.deleted_at < self._retention:
                raise RetentionWindowError(
                    f"cell {cell_id} was deleted at {record.deleted_at.isoformat()}; it may not be purged "
                    f"before {(record.deleted_at + self._retention).isoformat()}"
                )
            self._owners[record.owner_id].drop(record, embed(record.text))
            del self._by_id[cell_id]

    def records(self) -> list[Record]:
        """Every record, in creation (id) order."""
        with self.lock:
            return list(self._by_id.values())

    def iter_records(self) -> Iterator[Record]:
        """Every record in creation order; the caller must hold ``lock`` while iterating."""
        return iter(self._by_id.values())

    def owner_records(self, owner_id: str) -> Iterator[Record]:
        """One owner's records in creation order; the caller must hold ``lock`` while iterating."""
        shard = self._owners.get(owner_id)
        if shard is None:
            return iter(())
        return (record for record in shard.records if record is not None)

    def shard(self, owner_id: str) -> OwnerShard | None:
        return self._owners.get(owner_id)

    def shards(self) -> list[OwnerShard]:
        with self.lock:
            return list(self._owners.values())

    def owned_shards(self) -> list[tuple[str, OwnerShard]]:
        """(owner id, shard) of every owner."""
        with self.lock:
            return list(self._owners.items())
