"""The metadata bag: reserved ``amp.*`` vocabulary (spec §4), the 64 KiB cap, RFC 7396 merge (amp.update)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from reference_server.amp11.errors import invalid

MAX_BAG_BYTES = 64 * 1024


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _relations(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, dict)
        and all(isinstance(item.get(key), str) for key in ("subject", "predicate", "object"))
        for item in value
    )


RESERVED: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "amp.ttl": (
        "a non-negative integer",
        lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    ),
    "amp.confidence": ("a number between 0.0 and 1.0", lambda v: _is_number(v) and 0.0 <= v <= 1.0),
    "amp.entities": ("an array of strings", _strings),
    "amp.relations": ("an array of {subject, predicate, object} string triples", _relations),
    "amp.categories": ("an array of strings", _strings),
    "amp.summary": ("a string", lambda v: isinstance(v, str)),
    "amp.provenance.message_id": ("a string", lambda v: isinstance(v, str)),
    "amp.provenance.run_id": ("a string", lambda v: isinstance(v, str)),
    "amp.lineage.parent_ids": ("an array of strings", _strings),
}


def check_metadata(value: Any, *, check_reserved: bool = True, where: str = "metadata") -> dict[str, Any]:
    """Validate a metadata bag: an object, reserved keys of their registered type, at most 64 KiB."""
    if not isinstance(value, dict):
        raise invalid(f"{where} must be an object")
    if check_reserved:
        for key, (expected, ok) in RESERVED.items():
            if key in value and not ok(value[key]):
                raise invalid(f"{where}[{key!r}] must be {expected}")
    check_size(value, where=where)
    return value


def check_size(value: dict[str, Any], *, where: str = "metadata") -> None:
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_BAG_BYTES:
        raise invalid(f"{where} is {size} bytes serialised; the cap is {MAX_BAG_BYTES} (64 KiB)")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON Merge Patch: objects merge key by key, ``null`` removes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
