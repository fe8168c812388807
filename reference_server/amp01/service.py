"""The AMP operations, independent of HTTP: create, read, patch, delete, list, search, run a pass.

Each operation either returns the data to send or raises ``AMPError``. Check order follows the API
reference: identity (done by the caller) -> validation -> existence and permission -> scoring budget
-> transition and size. Everything that must be atomic runs under the store's lock, and a refused
request changes nothing stored.
"""

from __future__ import annotations

import contextlib
import json
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reference_server.amp01.access import AccessControl, folded_id
from reference_server.amp01.auth import KeyRing
from reference_server.amp01.clock import Clock
from reference_server.amp01.config import MAX_PAGE_SIZE, Settings
from reference_server.amp01.embedding import DIMENSIONS, PROVIDER
from reference_server.amp01.errors import (
    ACCESS_DENIED,
    CELL_TOO_LARGE,
    FORBIDDEN,
    INVALID_TRANSITION,
    NOT_FOUND,
    RATE_LIMITED,
    AMPError,
    error_entry,
    validation_error,
)
from reference_server.amp01.faults import Faults
from reference_server.amp01.ids import IdGenerator
from reference_server.amp01.lifecycle import LifecycleEngine, PassReport, below_threshold, record_score
from reference_server.amp01.models import (
    STATUSES,
    CreateRequest,
    ListQuery,
    ScoringIn,
    SearchRequest,
    UpdateRequest,
)
from reference_server.amp01.ratelimit import ScoringRateLimiter
from reference_server.amp01.search import search as run_search
from reference_server.amp01.store import Record, Store
from reference_server.amp01.timestamps import format_timestamp, parse_rfc3339

AMP_VERSION = "0.1.0"
MANUAL_RUN_ENDPOINT = "/amp/v1/lifecycle/run"

DEFAULT_SCORING: dict[str, Any] = {"importance": 0.5, "confidence": 1.0, "decay_rate": 0.01}
DEFAULT_POLICY: dict[str, Any] = {"readable_by": [], "writable_by": [], "public": False}
DEFAULT_PROVENANCE: dict[str, Any] = {"source_type": None, "source_ref": None, "extraction_method": None}


class DeliberateCrash(Exception):
    """A fault's 500: answered as a bare plain-text 500, like an unhandled crash would be."""


def cell_size(cell: dict[str, Any]) -> int:
    """Bytes of the compact UTF-8 JSON of the cell, exactly as a GET would return it."""
    return len(json.dumps(cell, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


@dataclass
class ServerState:
    """Everything one server instance holds; ``app.state.amp`` is one of these."""

    settings: Settings
    clock: Clock
    faults: Faults = field(init=False)
    store: Store = field(init=False)
    engine: LifecycleEngine = field(init=False)
    limiter: ScoringRateLimiter = field(init=False)
    access: AccessControl = field(init=False)
    ids: IdGenerator = field(init=False)
    keys: KeyRing | None = field(init=False)

    def __post_init__(self) -> None:
        self.faults = Faults(self.settings.faults)
        self.store = Store(self.clock, self.settings.retention_days)
        self.engine = LifecycleEngine(self.store, self.clock, self.settings, self.faults)
        self.limiter = ScoringRateLimiter(
            self.settings.scoring_patch_limit, self.settings.scoring_patch_window_seconds, self.faults
        )
        self.access = AccessControl(self.faults)
        self.ids = IdGenerator(
            self.clock, prefixed=self.settings.id_form == "prefixed", uuid_ids=self.faults.on("id-not-ulid")
        )
        self.keys = KeyRing(self.settings.api_keys) if self.settings.api_keys is not None else None

    # ----------------------------------------------------------------- helpers

    def ts(self, value: datetime) -> str:
        return format_timestamp(value, local_offset=self.faults.on("timestamps-local-offset"))

    @property
    def upstream(self) -> bool:
        return self.settings.convention == "upstream"

    def _denied(self) -> AMPError:
        """The upstream convention's one answer for unknown, forbidden and deleted ids."""
        return AMPError(403, ACCESS_DENIED, "Access denied")

    def _unknown(self, memory_id: str) -> AMPError:
        if self.faults.on("unknown-id-500"):
            raise DeliberateCrash(memory_id)
        if self.upstream:
            return self._denied()
        return AMPError(404, NOT_FOUND, f"Memory cell {memory_id} not found")

    def _forbidden(self, action: str) -> AMPError:
        if self.upstream:
            return self._denied()
        return AMPError(403, FORBIDDEN, f"Caller may not {action} this memory cell")

    def _transition(self, message: str, details: dict[str, Any] | None = None) -> AMPError:
        code = "CONFLICT" if self.faults.on("transition-wrong-code") else INVALID_TRANSITION
        return AMPError(409, code, message, details)

    def _size_check(self, cell: dict[str, Any]) -> AMPError | None:
        size = cell_size(cell)
        limit = self.settings.max_cell_size_bytes
        if size > limit:
            return AMPError(
                413,
                CELL_TOO_LARGE,
                f"Serialized cell is {size} bytes; the limit is {limit}",
                {"size_bytes": size, "max_cell_size_bytes": limit},
            )
        return None

    def _lookup(self, memory_id: str, agent: str, action: str) -> Record:
        """Existence, then permission; in the upstream convention a deleted cell is also unknown."""
        record = self.store.get(memory_id)
        if record is None:
            raise self._unknown(memory_id)
        if self.upstream and record.status == "deleted":
            raise self._denied()
        allowed = self.access.can_read if action == "read" else self.access.can_write
        if not allowed(record.cell, agent):
            raise self._forbidden(action)
        return record

    def _stored_text(self, text: str) -> str:
        """content.text as stored: as sent, or NFKC-folded under the text-normalised fault."""
        return unicodedata.normalize("NFKC", text) if self.faults.on("text-normalised") else text

    def _crash_on_unusual_input(self, body: dict[str, Any]) -> None:
        """The three fuzzing-only faults: deliberate 500s on input no hand-written check sends."""
        identity = body.get("identity")
        if self.faults.on("nonascii-session-500") and isinstance(identity, dict):
            session = identity.get("session_id")
            if isinstance(session, str) and not session.isascii():
                raise DeliberateCrash("session_id")
        content = body.get("content")
        metadata = content.get("metadata") if isinstance(content, dict) else None
        if metadata is None:
            return
        if self.faults.on("huge-integer-500") and _has_huge_int(metadata):
            raise DeliberateCrash("huge integer")
        if self.faults.on("deep-metadata-500") and _depth(metadata) > 3:
            raise DeliberateCrash("deep metadata")

    # ----------------------------------------------------------------- capabilities

    def health(self) -> dict[str, Any]:
        version = "0.2.0" if self.faults.on("health-version-mismatch") else AMP_VERSION
        return {"status": "ok", "amp_version": version}

    def spec(self) -> dict[str, Any]:
        settings = self.settings
        limit: dict[str, int] | None = None
        if settings.scoring_patch_limit > 0:
            limit = {
                "max_patches": settings.scoring_patch_limit
                + (2 if self.faults.on("spec-rate-overstated") else 0),
                "window_seconds": settings.scoring_patch_window_seconds,
            }
        size = settings.max_cell_size_bytes * (2 if self.faults.on("spec-size-overstated") else 1)
        return {
            "amp_version": AMP_VERSION,
            "capabilities": {
                "mcp_compatible": False,
                "storage_backends": ["memory"],
                "api_keys_required": settings.api_keys_required,
                "scoring_patch_limit": limit,
                "embedding": {"provider": PROVIDER, "dimensions": DIMENSIONS},
                "max_cell_size_bytes": size,
                "max_page_size": MAX_PAGE_SIZE,
                "retention_days": 7 if self.faults.on("retention-days-low") else settings.retention_days,
                "lifecycle_scheduler": {
                    "enabled": settings.lifecycle_enabled,
                    "interval_seconds": settings.lifecycle_interval_seconds,
                    "manual_run_endpoint": MANUAL_RUN_ENDPOINT
                    + ("-now" if self.faults.on("manual-run-endpoint-wrong") else ""),
                },
            },
        }

    # ----------------------------------------------------------------- create

    def create(self, agent: str, request: CreateRequest, body: dict[str, Any]) -> dict[str, Any]:
        """Build, size-check and store a new cell; ``agent`` is recorded as ``created_by``."""
        self._crash_on_unusual_input(body)
        now = self.clock.now()
        scoring = request.scoring or ScoringIn()
        importance = scoring.importance
        if self.faults.on("create-wrong-defaults") and "importance" not in scoring.model_fields_set:
            importance = 1.0
        policy = request.access_policy
        provenance = request.provenance
        created_at = now
        status = "active"
        if self.faults.on("create-honours-client-lifecycle"):
            status, created_at = _client_lifecycle(body, status, created_at)
        cell: dict[str, Any] = {
            "amp_version": AMP_VERSION,
            "id": self.ids.new(),
            "type": request.type,
            "content": {
                "text": self._stored_text(request.content.text),
                "metadata": request.content.metadata,
            },
            "identity": {
                "owner_id": request.identity.owner_id,
                "owner_type": request.identity.owner_type,
                "created_by": agent,
                "session_id": request.identity.session_id,
            },
            "lifecycle": {
                "created_at": self.ts(created_at),
                "last_accessed_at": None,
                "last_updated_at": None,
                "expires_at": None,
                "status": status,
            },
            "scoring": {
                "importance": importance,
                "confidence": scoring.confidence,
                "decay_rate": scoring.decay_rate,
                "access_count": 0,
            },
            "access_policy": {
                "readable_by": list(policy.readable_by) if policy else [],
                "writable_by": list(policy.writable_by) if policy else [],
                "public": policy.public if policy else False,
            },
            "provenance": {
                "source_type": provenance.source_type if provenance else None,
                "source_ref": provenance.source_ref if provenance else None,
                "extraction_method": provenance.extraction_method if provenance else None,
            },
        }
        record = Record(
            id=cell["id"],
            cell=cell,
            owner_id=request.identity.owner_id,
            created_at=created_at,
            decay_anchor=created_at,
            stale_since=created_at if status == "stale" else None,
            deleted_at=created_at if status == "deleted" else None,
        )
        too_large = None if self.faults.on("size-not-enforced") else self._size_check(cell)
        if too_large is not None:
            if self.faults.on("size-writes-before-refusing"):
                self.store.insert(record)
            raise too_large
        self.store.insert(record)
        return cell

    # ----------------------------------------------------------------- read

    def read(self, agent: str, memory_id: str) -> dict[str, Any]:
        """Return the cell and count the read (access_count + 1, last_accessed_at = now)."""
        with self.store.lock:
            record = self._lookup(memory_id, agent, "read")
            now = self.clock.now()
            cell = record.cell
            scoring = cell["scoring"]
            if not self.faults.on("get-no-access-count"):
                scoring = {**scoring, "access_count": scoring["access_count"] + 1}
            lifecycle = dict(cell["lifecycle"])
            if not self.faults.on("get-no-last-accessed"):
                lifecycle["last_accessed_at"] = self.ts(now)
            cell = {**cell, "scoring": scoring, "lifecycle": lifecycle}
            record.last_accessed_at = now
            if not self.faults.on("read-does-not-reset-clock"):
                record.decay_anchor = now
            self.store.replace(record, cell)
        if cell["lifecycle"]["status"] == "deleted" and self.faults.on("deleted-read-wrong-status"):
            cell = {**cell, "lifecycle": {**cell["lifecycle"], "status": "archived"}}
        return cell

    # ----------------------------------------------------------------- patch

    def patch(
        self, agent: str, memory_id: str, update: UpdateRequest, body: dict[str, Any]
    ) -> dict[str, Any]:
        """Merge the update into the cell, atomically, or refuse it and change nothing."""
        self._crash_on_unusual_input(body)
        scoring_sent = update.scoring is not None
        counted = scoring_sent or self.faults.on("rate-counts-non-scoring")
        with self.store.lock:
            now = self.clock.now()
            budget_key = memory_id
            if counted and self.faults.on("rate-before-access"):
                self._check_budget(budget_key, now)
            try:
                record = self._lookup(memory_id, agent, "write")
            except AMPError as refused:
                if refused.status == 403 and self.faults.on("forbidden-patch-writes"):
                    self._write_anyway(memory_id, update, body, now)
                raise
            if record.status == "deleted":
                raise self._transition("Memory cell is deleted; deleted is terminal", {"status": "deleted"})
            if self.faults.on("archive-status-only-refused") and _status_only(body):
                raise validation_error(
                    [error_entry("missing", ["body", "lifecycle", "created_at"], "Field required")]
                )
            if counted and not self.faults.on("rate-before-access"):
                try:
                    self._check_budget(budget_key, now)
                except AMPError:
                    if self.faults.on("rate-429-applies-content"):
                        rest = self._merge(record, update.model_copy(update={"scoring": None}), body, now)
                        self._commit_patch(record, rest, body, now)
                    raise
            try:
                cell = self._merge(record, update, body, now)
            except AMPError as refused:
                if refused.code == INVALID_TRANSITION and self.faults.on("refused-409-applies-other-members"):
                    rest = self._merge(record, update.model_copy(update={"lifecycle": None}), body, now)
                    self._commit_patch(record, rest, body, now)
                raise
            if not self.faults.on("size-patch-not-enforced"):
                too_large = self._size_check(cell)
                if too_large is not None:
                    raise too_large
            self._commit_patch(record, cell, body, now)
            if counted:
                self.limiter.record(budget_key, now)
        return cell

    def _write_anyway(
        self, memory_id: str, update: UpdateRequest, body: dict[str, Any], now: datetime
    ) -> None:
        """The forbidden-patch-writes fault: the refused caller's PATCH is applied all the same."""
        record = self.store.get(memory_id)
        if record is not None and record.status != "deleted":
            with contextlib.suppress(AMPError):
                self._commit_patch(record, self._merge(record, update, body, now), body, now)

    def _check_budget(self, cell_id: str, now: datetime) -> None:
        if self.faults.on("rate-limit-off"):
            return
        retry = self.limiter.retry_after(cell_id, now)
        if retry is None:
            return
        if self.faults.on("rate-counts-refused"):
            self.limiter.record(cell_id, now)
        if self.faults.on("retry-after-fixed"):
            retry = self.limiter.window_seconds
        header = retry + 30 if self.faults.on("retry-after-mismatch") else retry
        raise AMPError(
            429,
            RATE_LIMITED,
            f"Scoring of this cell was changed {self.limiter.limit} times in the last "
            f"{self.limiter.window_seconds} s; retry in {retry} s",
            {
                "retry_after_seconds": retry,
                "max_patches": self.limiter.limit,
                "window_seconds": self.limiter.window_seconds,
            },
            {"Retry-After": str(header)},
        )

    def _merge(
        self, record: Record, update: UpdateRequest, body: dict[str, Any], now: datetime
    ) -> dict[str, Any]:
        """The cell as it would be after the update (nothing stored yet)."""
        replace_whole = self.faults.on("patch-replaces-subobject")
        old = record.cell
        cell = dict(old)
        if update.content is not None:
            text, metadata = update.content.text, update.content.metadata
            if replace_whole:
                metadata = metadata or {}
            cell["content"] = {
                "text": old["content"]["text"] if text is None else self._stored_text(text),
                "metadata": old["content"]["metadata"] if metadata is None else metadata,
            }
        if update.scoring is not None:
            base = {**DEFAULT_SCORING, "access_count": 0} if replace_whole else dict(old["scoring"])
            for name in ("importance", "confidence", "decay_rate"):
                if name in update.scoring.model_fields_set:
                    base[name] = getattr(update.scoring, name)
            cell["scoring"] = base
        if update.access_policy is not None:
            if self.faults.on("policy-edit-drops-creator"):
                self.access.policy_replaced(old["id"], update.access_policy.model_fields_set)
            base = dict(DEFAULT_POLICY) if replace_whole else dict(old["access_policy"])
            for name in update.access_policy.model_fields_set & set(DEFAULT_POLICY):
                value = getattr(update.access_policy, name)
                base[name] = list(value) if isinstance(value, list) else value
            cell["access_policy"] = base
        if update.provenance is not None:
            base = dict(DEFAULT_PROVENANCE) if replace_whole else dict(old["provenance"])
            for name in update.provenance.model_fields_set & set(DEFAULT_PROVENANCE):
                base[name] = getattr(update.provenance, name)
            cell["provenance"] = base
        lifecycle = dict(old["lifecycle"])
        if update.lifecycle is not None:
            sent = update.lifecycle.model_fields_set
            target = update.lifecycle.status
            if "status" in sent:
                self._check_transition(old["lifecycle"]["status"], target)
                lifecycle["status"] = target
            if "expires_at" in sent:
                expires = update.lifecycle.expires_at
                lifecycle["expires_at"] = self.ts(parse_rfc3339(expires)) if expires is not None else None
        if self.faults.on("patch-mutable-created-at"):
            created = _raw(body, "lifecycle", "created_at")
            if isinstance(created, str):
                with contextlib.suppress(ValueError):
                    lifecycle["created_at"] = self.ts(parse_rfc3339(created))
        if self.faults.on("patch-mutable-owner"):
            owner = _raw(body, "identity", "owner_id")
            if isinstance(owner, str) and owner:
                cell["identity"] = {**old["identity"], "owner_id": owner}
        status_sent = update.lifecycle is not None and "status" in update.lifecycle.model_fields_set
        flips = update.scoring is not None and self.faults.on("scoring-patch-flips-status")
        if flips and not status_sent and lifecycle["status"] in ("active", "stale"):
            low = below_threshold(record_score(record, now, cell["scoring"], self.faults), self.faults)
            lifecycle["status"] = "stale" if low else "active"
        lifecycle["last_updated_at"] = self.ts(now)
        cell["lifecycle"] = lifecycle
        return cell

    def _check_transition(self, current: str, target: str) -> None:
        if target == current:
            return
        if target == "deleted":
            if self.faults.on("patch-deleted-status-allowed"):
                return
            raise self._transition(
                "A cell cannot be PATCHed to 'deleted'; archive it, then DELETE it",
                {"from": current, "to": target},
            )
        if current == "archived" and not self.faults.on("archived-can-reactivate"):
            raise self._transition(
                f"An archived cell cannot return to '{target}'; re-create it instead",
                {"from": current, "to": target},
            )
        if current == "deleted":
            raise self._transition(
                "Memory cell is deleted; deleted is terminal", {"from": current, "to": target}
            )

    def _commit_patch(
        self, record: Record, cell: dict[str, Any], body: dict[str, Any], now: datetime
    ) -> None:
        old_status = record.status
        new_status = cell["lifecycle"]["status"]
        if new_status != old_status:
            record.stale_since = now if new_status == "stale" else None
            if new_status == "deleted":
                record.deleted_at = now
        record.last_updated_at = now
        if cell["lifecycle"]["created_at"] != record.cell["lifecycle"]["created_at"]:
            created = parse_rfc3339(_raw(body, "lifecycle", "created_at"))
            if record.last_accessed_at is None:
                record.decay_anchor = created
            record.created_at = created
        self.store.replace(record, cell)

    # ----------------------------------------------------------------- delete

    def delete(self, agent: str, memory_id: str) -> dict[str, Any]:
        """Soft-delete an archived cell; returns the deleted cell (sent only by a fault)."""
        with self.store.lock:
            record = self._lookup(memory_id, agent, "write")
            status = record.status
            if status == "deleted":
                raise self._transition(
                    "Memory cell is already deleted; deleted is terminal", {"status": status}
                )
            if status != "archived" and not self.faults.on("delete-active-allowed"):
                raise self._transition(
                    f"Only archived cells can be deleted; this one is '{status}'. Archive it first",
                    {"status": status},
                )
            now = self.clock.now()
            cell = dict(record.cell)
            cell["lifecycle"] = {**cell["lifecycle"], "status": "deleted", "last_updated_at": self.ts(now)}
            record.deleted_at = now
            record.last_updated_at = now
            record.stale_since = None
            self.store.replace(record, cell)
        return cell

    # ----------------------------------------------------------------- list and search

    def list_cells(self, agent: str, query: ListQuery) -> tuple[list[dict[str, Any]], bool]:
        """One page of readable cells in creation order, and whether another page exists."""
        status = query.status or "active"
        if status == "deleted" and not self.faults.on("deleted-in-list"):
            return [], False
        check_acl = not self.faults.on("list-ignores-acl")
        results: list[dict[str, Any]] = []
        has_more = False
        skipped = 0
        with self.store.lock:
            records = (
                self.store.owner_records(query.owner_id)
                if query.owner_id is not None
                else self.store.iter_records()
            )
            if query.owner_id is not None and self.faults.on("owner-filter-folded"):
                folded = folded_id(query.owner_id)
                records = (r for r in self.store.iter_records() if folded_id(r.owner_id) == folded)
            for record in records:
                cell = record.cell
                if cell["lifecycle"]["status"] != status:
                    continue
                if query.type is not None and cell["type"] != query.type:
                    continue
                if check_acl and not self.access.can_read(cell, agent):
                    continue
                if skipped < query.offset:
                    skipped += 1
                    continue
                if len(results) == query.limit:
                    has_more = True
                    break
                results.append(cell)
        if self.faults.on("has-more-always-false"):
            has_more = False
        return results, has_more

    def search(self, agent: str, request: SearchRequest) -> tuple[list[dict[str, Any]], bool]:
        statuses = set(request.status) if request.status is not None else {"active"}
        include_stale = request.include_stale and not self.faults.on("include-stale-ignored")
        if include_stale or (request.status is None and self.faults.on("stale-in-default-search")):
            statuses.add("stale")
        if not self.faults.on("deleted-in-list"):
            statuses.discard("deleted")
        results, has_more = run_search(
            self.store,
            self.access,
            self.faults,
            self.clock.now(),
            agent,
            query=request.query,
            owner_id=request.owner_id,
            types=set(request.types) if request.types is not None else None,
            statuses=statuses,
            limit=request.limit,
            offset=request.offset,
        )
        if self.faults.on("has-more-always-false"):
            has_more = False
        return results, has_more

    # ----------------------------------------------------------------- lifecycle

    def run_pass(self) -> PassReport:
        return self.engine.run_pass()


def _raw(body: dict[str, Any], section: str, name: str) -> Any:
    part = body.get(section)
    return part.get(name) if isinstance(part, dict) else None


def _client_lifecycle(body: dict[str, Any], status: str, created_at: datetime) -> tuple[str, datetime]:
    """The create-honours-client-lifecycle fault: take status and created_at from the body."""
    sent_status = _raw(body, "lifecycle", "status")
    if isinstance(sent_status, str) and sent_status in STATUSES:
        status = sent_status
    sent_created = _raw(body, "lifecycle", "created_at")
    if isinstance(sent_created, str):
        with contextlib.suppress(ValueError):
            created_at = parse_rfc3339(sent_created)
    return status, created_at


def _has_huge_int(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int) and abs(item) > 2**53:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _depth(value: Any) -> int:
    """Container nesting depth: ``{}`` is 1, ``{"a": {}}`` is 2."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def _status_only(body: dict[str, Any]) -> bool:
    """``archive-status-only-refused``: the body is ``{"lifecycle": {"status": "archived"}}`` alone."""
    return body == {"lifecycle": {"status": "archived"}}
