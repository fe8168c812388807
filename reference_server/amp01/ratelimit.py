"""Per-cell sliding-window budget for scoring PATCHes (RFC-AMP-001 §5: decay-score manipulation).

Only accepted edits are recorded, so a refused attempt never pushes the caller's deadline back.
The window is measured on the injected clock.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from datetime import datetime, timedelta

from reference_server.amp01.faults import Faults

_GLOBAL = "*"


class ScoringRateLimiter:
    """``retry_after`` answers whether one more edit fits; ``record`` counts an accepted edit."""

    def __init__(self, limit: int, window_seconds: int, faults: Faults) -> None:
        self.limit = limit
        self.window_seconds = window_seconds
        self._window = timedelta(seconds=window_seconds)
        self._forget = not faults.on("rate-never-forgets")
        self._global = faults.on("rate-limit-global")
        self._lock = threading.Lock()
        self._edits: dict[str, deque[datetime]] = {}

    @property
    def enabled(self) -> bool:
        return self.limit > 0

    def _key(self, cell_id: str) -> str:
        return _GLOBAL if self._global else cell_id

    def _prune(self, edits: deque[datetime], now: datetime) -> None:
        if self._forget:
            while edits and now - edits[0] >= self._window:
                edits.popleft()

    def retry_after(self, cell_id: str, now: datetime) -> int | None:
        """``None`` if one more edit is allowed now, else whole seconds until the oldest leaves (>= 1)."""
        if not self.enabled:
            return None
        with self._lock:
            edits = self._edits.get(self._key(cell_id))
            if edits is None:
                return None
            self._prune(edits, now)
            if len(edits) < self.limit:
                return None
            remaining = (edits[0] + self._window - now).total_seconds()
            return max(1, math.ceil(remaining))

    def record(self, cell_id: str, now: datetime) -> None:
        if not self.enabled:
            return
        with self._lock:
            edits = self._edits.setdefault(self._key(cell_id), deque())
            self._prune(edits, now)
            edits.append(now)

    def forget(self, cell_id: str) -> None:
        with self._lock:
            self._edits.pop(cell_id, None)
