"""Decay and the lifecycle engine: active -> stale -> archived, stale -> active on recovery.

score = importance x confidence x exp(-decay_rate x Δt_days), Δt measured from the last read (else
creation) on the injected clock. A pass moves each cell at most one step:

* active and score < 0.3 -> stale (exactly 0.3 stays active);
* stale and score >= 0.3 -> active;
* stale, score < 0.3, and 30 days since max(went stale, last update, last access) -> archived;
* archived and deleted cells are never touched.

With ``AMP_PURGE_RETENTION=1`` the pass also purges deleted cells past the retention window.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from datetime import datetime, timedelta
from typing import Any, TypedDict

from reference_server.amp01.clock import Clock
from reference_server.amp01.config import ARCHIVE_AFTER_DAYS, Settings
from reference_server.amp01.faults import Faults
from reference_server.amp01.store import Record, RetentionWindowError, Store

THRESHOLD = 0.3
SECONDS_PER_DAY = 86400.0

log = logging.getLogger("reference_server.amp01.lifecycle")


def decay_score(importance: float, confidence: float, decay_rate: float, delta_days: float) -> float:
    """importance x confidence x e^(-decay_rate x Δt_days); a negative Δt counts as 0."""
    return importance * confidence * math.exp(-decay_rate * max(0.0, delta_days))


def record_score(
    record: Record, now: datetime, scoring: dict[str, Any] | None = None, faults: Faults | None = None
) -> float:
    """The current decay score of a stored cell (optionally with other scoring values). Δt is in
    fractional days; the ``decay-in-hours`` fault counts hours, ``decay-whole-days`` whole days."""
    values = scoring if scoring is not None else record.cell["scoring"]
    seconds = (now - record.decay_anchor).total_seconds()
    delta = seconds / SECONDS_PER_DAY
    if faults is not None and faults.on("decay-in-hours"):
        delta = seconds / 3600.0
    elif faults is not None and faults.on("decay-whole-days"):
        delta = float(math.floor(delta))
    return decay_score(values["importance"], values["confidence"], values["decay_rate"], delta)


def below_threshold(score: float, faults: Faults) -> bool:
    """Below 0.3 is stale; the ``threshold-inclusive`` fault also counts exactly 0.3."""
    return score <= THRESHOLD if faults.on("threshold-inclusive") else score < THRESHOLD


class PassReport(TypedDict):
    """What one pass did: the body ``POST /lifecycle/run`` returns."""

    transitions: dict[str, int]
    purged: int


def with_status(cell: dict[str, Any], status: str) -> dict[str, Any]:
    """A copy of ``cell`` with a new lifecycle status (stored cells are never mutated in place)."""
    return {**cell, "lifecycle": {**cell["lifecycle"], "status": status}}


class LifecycleEngine:
    """Runs passes over the whole store under its lock."""

    def __init__(self, store: Store, clock: Clock, settings: Settings, faults: Faults) -> None:
        self._store = store
        self._clock = clock
        self._settings = settings
        self._faults = faults
        self._archive_after = timedelta(days=ARCHIVE_AFTER_DAYS)
        self._retention = timedelta(days=settings.retention_days)

    def run_pass(self) -> PassReport:
        to_stale = to_archived = to_active = purged = 0
        never_recovers = self._faults.on("lifecycle-never-recovers")
        touches_archived = self._faults.on("pass-touches-archived")
        with self._store.lock:
            now = self._clock.now()
            to_purge: list[str] = []
            for record in list(self._store.iter_records()):
                status = record.status
                score = record_score(record, now, faults=self._faults) if status != "deleted" else 0.0
                if status == "active":
                    if below_threshold(score, self._faults):
                        record.stale_since = now
                        self._store.replace(record, with_status(record.cell, "stale"))
                        to_stale += 1
                elif status == "stale":
                    if not below_threshold(score, self._faults):
                        if not never_recovers:
                            record.stale_since = None
                            self._store.replace(record, with_status(record.cell, "active"))
                            to_active += 1
                    elif now - self._quiet_since(record) >= self._archive_after:
                        record.stale_since = None
                        self._store.replace(record, with_status(record.cell, "archived"))
                        to_archived += 1
                elif status == "archived":
                    if touches_archived and not below_threshold(score, self._faults):
                        self._store.replace(record, with_status(record.cell, "active"))
                        to_active += 1
                elif (
                    status == "deleted"
                    and self._settings.purge_retention
                    and record.deleted_at is not None
                    and now - record.deleted_at >= self._retention
                ):
                    to_purge.append(record.id)
            for cell_id in to_purge:
                try:
                    self._store.purge(cell_id)
                    purged += 1
                except (RetentionWindowError, KeyError, ValueError):  # pragma: no cover - checked above
                    continue
        return {
            "transitions": {
                "active_to_stale": to_stale,
                "stale_to_archived": to_archived,
                "stale_to_active": to_active,
            },
            "purged": purged,
        }

    @staticmethod
    def _quiet_since(record: Record) -> datetime:
        """Start of the 30-day archival clock: the latest of going stale, last update, last access."""
        moments = [m for m in (record.stale_since, record.last_updated_at, record.last_accessed_at) if m]
        return max(moments) if moments else record.created_at


class Scheduler:
    """Runs a pass every ``interval_seconds`` (real time) from an asyncio task in the app lifespan."""

    def __init__(self, engine: LifecycleEngine, interval_seconds: float) -> None:
        self._engine = engine
        self._interval = interval_seconds
        self._task: asyncio.Task[None] | None = None
        self.passes = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="amp-lifecycle")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                report = await asyncio.to_thread(self._engine.run_pass)
                self.passes += 1
                log.info("lifecycle pass: %s purged=%d", report["transitions"], report["purged"])
            except Exception:  # a failed pass must not stop the scheduler
                log.exception("lifecycle pass failed")
