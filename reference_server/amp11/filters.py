"""``RecallFilters`` (amp.recall, amp.export): status, source, time window, draft ``metadata_filters``.

``visibility`` is accepted and ignored (spec §5.3, Strategy A: every memory of an agent partition is
"private" in the v1.0 sense). Metadata predicates follow the v1.2-draft rules: strict AND, a missing key
or a value of another type family is a miss (never an error), bad predicate shapes are ``invalid_request``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reference_server.amp11.errors import invalid
from reference_server.amp11.store import STATUSES, Memory, parse_timestamp

MAX_METADATA_FILTERS = 32
OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "contains")
_KNOWN = ("status", "visibility", "source", "timestamp_after", "timestamp_before", "metadata_filters")


@dataclass(frozen=True)
class Predicate:
    key: str
    operator: str
    value: Any


@dataclass(frozen=True)
class Filters:
    status: str | None = None
    source: str | None = None
    after: datetime | None = None
    before: datetime | None = None
    predicates: tuple[Predicate, ...] = field(default=())
    mentions_visibility: bool = False

    def keep(self, memory: Memory, *, default_statuses: tuple[str, ...]) -> bool:
        statuses = (self.status,) if self.status else default_statuses
        if memory.status not in statuses:
            return False
        if self.source is not None and memory.source != self.source:
            return False
        if self.after is not None and not memory.created > self.after:
            return False
        if self.before is not None and not memory.created < self.before:
            return False
        return all(_holds(predicate, memory.metadata) for predicate in self.predicates)


def parse_filters(value: Any) -> Filters:
    """Validate a ``filters`` object (absent is no filter)."""
    if value is None:
        return Filters()
    if not isinstance(value, dict):
        raise invalid("filters must be an object")
    unknown = sorted(key for key in value if key not in _KNOWN)
    if unknown:
        raise invalid(f"filters has unknown key(s): {', '.join(map(repr, unknown))}")
    status = value.get("status")
    if status is not None and status not in STATUSES:
        raise invalid(f"filters.status must be one of {', '.join(STATUSES)}")
    visibility = value.get("visibility")
    if visibility is not None and visibility not in ("private", "shared"):
        raise invalid("filters.visibility must be 'private' or 'shared'")
    source = value.get("source")
    if source is not None and not isinstance(source, str):
        raise invalid("filters.source must be a string")
    return Filters(
        status=status,
        source=source,
        after=_moment(value, "timestamp_after"),
        before=_moment(value, "timestamp_before"),
        predicates=_predicates(value.get("metadata_filters")),
        mentions_visibility="visibility" in value,
    )


def _moment(filters: dict[str, Any], key: str) -> datetime | None:
    text = filters.get(key)
    if text is None:
        return None
    moment = parse_timestamp(text) if isinstance(text, str) else None
    if moment is None:
        raise invalid(f"filters.{key} must be an ISO 8601 date-time")
    return moment


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _predicates(value: Any) -> tuple[Predicate, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise invalid("filters.metadata_filters must be an array")
    if len(value) > MAX_METADATA_FILTERS:
        raise invalid(
            f"filters.metadata_filters has {len(value)} entries; maxItems is {MAX_METADATA_FILTERS}"
        )
    predicates = []
    for index, item in enumerate(value):
        where = f"filters.metadata_filters[{index}]"
        if not isinstance(item, dict) or set(item) != {"key", "operator", "value"}:
            raise invalid(f"{where} must be an object with exactly key, operator and value")
        key, operator, operand = item["key"], item["operator"], item["value"]
        if not isinstance(key, str):
            raise invalid(f"{where}.key must be a string")
        if operator not in OPERATORS:
            raise invalid(f"{where}.operator must be one of {', '.join(OPERATORS)}")
        if operator == "in":
            if not isinstance(operand, list) or not all(_scalar(element) for element in operand):
                raise invalid(f"{where}.value must be an array of scalars for 'in'")
        elif not _scalar(operand):
            raise invalid(f"{where}.value must be a string, number or boolean for {operator!r}")
        predicates.append(Predicate(key, operator, operand))
    return tuple(predicates)


def _family(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def _same_family(left: Any, right: Any) -> bool:
    return _family(left) == _family(right)


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
}


def _holds(predicate: Predicate, metadata: dict[str, Any]) -> bool:
    if predicate.key not in metadata:
        return False
    stored, operand = metadata[predicate.key], predicate.value
    if predicate.operator == "in":
        return any(_same_family(stored, item) and stored == item for item in operand)
    if predicate.operator == "contains":
        if isinstance(stored, list):
            return any(_same_family(item, operand) and item == operand for item in stored)
        return isinstance(stored, str) and isinstance(operand, str) and operand in stored
    if not _same_family(stored, operand):
        return False
    if predicate.operator == "eq":
        return bool(stored == operand)
    if predicate.operator == "ne":
        return bool(stored != operand)
    if _family(stored) == "bool":
        return False
    return _ORDER[predicate.operator](stored, operand)
