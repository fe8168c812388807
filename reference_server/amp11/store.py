"""The in-memory store both channels share.

Memory ids are unique within a scope, not across the store: an MXF document exported from one scope can be
imported into another without id collisions (the round trip of spec Appendix A), so a memory is stored
under an internal row number and found by ``(id, scope)``. Ids the backend assigns (``mem_000001``...) are
deterministic and never reused. Every verb runs under ``Store.lock``, so the REST thread and the MCP loop
see one consistent store.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from reference_server.amp11.scope import Scope

Clock = Callable[[], datetime]
RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")

STATUSES = ("active", "pinned", "archived")


def system_clock() -> datetime:
    return datetime.now(UTC)


def format_timestamp(moment: datetime) -> str:
    """ISO 8601 in UTC with microseconds and ``Z``: sortable as text, fixed width."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(text: str) -> datetime | None:
    """An ISO 8601 date-time (a missing offset is read as UTC); None when it is not one."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment


@dataclass
class Memory:
    """One stored memory. ``timestamp`` keeps the text it was given (MXF fidelity); ``created`` sorts."""

    id: str
    content: str
    scope: Scope
    source: str
    timestamp: str
    created: datetime
    status: str = "active"
    metadata: dict[str, Any] = field(default_factory=dict)
    visibility: str = "shared"
    consolidated: bool = False

    def result(self, *, score: float, with_visibility: bool = False) -> dict[str, Any]:
        """The ``MemoryResult`` payload (spec §3.1)."""
        row: dict[str, Any] = {
            "id": self.id,
            "content": self.content,
            "score": score,
            "source": self.source,
            "timestamp": self.timestamp,
            "status": self.status,
            "scope": dict(self.scope),
            "metadata": dict(self.metadata),
        }
        if with_visibility:
            row["visibility"] = self.visibility
        return row

    def order_key(self) -> tuple[datetime, str]:
        """The deterministic export order: ascending timestamp, ties broken by id."""
        return (self.created, self.id)


class Store:
    """Rows by internal number, plus the counters ``amp.stats`` reports."""

    def __init__(self, clock: Clock = system_clock) -> None:
        self.lock = threading.RLock()
        self.clock = clock
        self._rows: dict[int, Memory] = {}
        self._next_row = 1
        self._next_id = 1
        self.tombstones: list[Memory] = []
        self.last_consolidation: datetime | None = None

    def now(self) -> datetime:
        return self.clock()

    def new_id(self) -> str:
        """The next backend-assigned id, skipping any an import already used."""
        with self.lock:
            taken = {memory.id for memory in self._rows.values()}
            while True:
                candidate = f"mem_{self._next_id:06d}"
                self._next_id += 1
                if candidate not in taken:
                    return candidate

    def add(self, memory: Memory) -> int:
        with self.lock:
            row = self._next_row
            self._next_row += 1
            self._rows[row] = memory
            return row

    def replace(self, row: int, memory: Memory) -> None:
        with self.lock:
            self._rows[row] = memory

    def remove(self, row: int) -> None:
        with self.lock:
            self.tombstones.append(self._rows.pop(row))

    def rows(self) -> Iterator[tuple[int, Memory]]:
        """A snapshot of every row, in insertion order."""
        with self.lock:
            return iter(list(self._rows.items()))

    def find(self, memory_id: str) -> list[tuple[int, Memory]]:
        return [(row, memory) for row, memory in self.rows() if memory.id == memory_id]

    def snapshot(self) -> tuple[dict[int, Memory], int, int]:
        """State to roll back to (``on_conflict: fail_atomic``)."""
        with self.lock:
            return (
                {row: replace(memory) for row, memory in self._rows.items()},
                self._next_row,
                self._next_id,
            )

    def restore(self, state: tuple[dict[int, Memory], int, int]) -> None:
        with self.lock:
            self._rows, self._next_row, self._next_id = dict(state[0]), state[1], state[2]

    def __len__(self) -> int:
        return len(self._rows)
