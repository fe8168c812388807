"""Cell ids: ``mem_`` + ULID (or a bare ULID), monotonic so they sort in creation order."""

from __future__ import annotations

import secrets
import threading
import uuid

from ulid import ULID

from reference_server.amp01.clock import Clock

_RANDOM_BITS = 80


class IdGenerator:
    """Monotonic ULIDs stamped from the injected clock, so the id's time matches ``created_at``.

    Within one millisecond (or if the clock steps back) the random part is incremented instead of
    redrawn, which keeps every new id greater than the last: list pages and ranking ties are ordered
    by id and must follow creation order.
    """

    def __init__(self, clock: Clock, *, prefixed: bool = True, uuid_ids: bool = False) -> None:
        self._clock = clock
        self._prefix = "mem_" if prefixed else ""
        self._uuid = uuid_ids
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last_random = 0

    def new(self) -> str:
        if self._uuid:  # the id-not-ulid fault
            return str(uuid.uuid4())
        millis = max(0, int(self._clock.now().timestamp() * 1000))
        with self._lock:
            if millis <= self._last_ms:
                millis = self._last_ms
                random_part = self._last_random + 1
                if random_part >= 1 << _RANDOM_BITS:
                    millis += 1
                    random_part = secrets.randbits(_RANDOM_BITS - 1)
            else:
                # Leave the top bit clear so many increments fit inside one millisecond.
                random_part = secrets.randbits(_RANDOM_BITS - 1)
            self._last_ms, self._last_random = millis, random_part
        raw = millis.to_bytes(6, "big") + random_part.to_bytes(10, "big")
        return self._prefix + str(ULID.from_bytes(raw))
