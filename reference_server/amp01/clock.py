"""Time, injected: everything time-dependent asks a ``Clock`` so tests can move time by days."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A source of aware UTC datetimes."""

    def now(self) -> datetime: ...


class SystemClock:
    """The real wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


def _as_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("ManualClock needs an aware datetime")
    return value.astimezone(UTC)


class ManualClock:
    """A clock that moves only when told to (``advance`` / ``set``); thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        self._lock = threading.Lock()
        self._now = _as_utc(start) if start is not None else datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: timedelta | float) -> datetime:
        """Move forward by a timedelta or a number of seconds; returns the new time."""
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        with self._lock:
            self._now = self._now + step
            return self._now

    def set(self, value: datetime) -> None:
        with self._lock:
            self._now = _as_utc(value)
