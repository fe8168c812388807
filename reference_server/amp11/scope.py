"""Scopes (spec §2.3): validation, the v1.0 flat ``agent_id`` alias (§5.5), and strict-AND matching (§3.3.4).

A scope is a flat mapping of up to seven string keys. At least one *isolating* key must be present; the
*refining* keys narrow a namespace but never open one. A stored memory matches a request scope when it
carries every key the request names, with the same value; keys the request omits are wildcards.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference_server.amp11.errors import invalid

Scope = dict[str, str]

ISOLATING_KEYS = ("agent_id", "group_id", "workspace_id", "user_id")
REFINING_KEYS = ("session_id", "app_id", "org_id")
SCOPE_KEYS = ISOLATING_KEYS + REFINING_KEYS


def check_scope(value: Any, *, require_isolating: bool = True, where: str = "scope") -> Scope:
    """Validate a scope object; raise ``invalid_request`` naming the first problem."""
    if not isinstance(value, dict):
        raise invalid(f"{where} must be an object")
    unknown = sorted(key for key in value if key not in SCOPE_KEYS)
    if unknown:
        raise invalid(f"{where} has unknown key(s): {', '.join(map(repr, unknown))}")
    for key, item in value.items():
        if not isinstance(item, str) or not item:
            raise invalid(f"{where}.{key} must be a non-empty string")
    if require_isolating and not any(key in value for key in ISOLATING_KEYS):
        raise invalid(f"{where} needs at least one isolating key ({', '.join(ISOLATING_KEYS)})")
    return dict(value)


def resolve_scope(
    args: Mapping[str, Any], *, require_isolating: bool = True, allow_flat: bool = True
) -> Scope:
    """The request scope: ``scope`` if present, else the legacy root ``agent_id`` promoted to a scope."""
    if "scope" in args:
        scope = check_scope(args["scope"], require_isolating=require_isolating)
        flat = args.get("agent_id")
        if flat is not None and scope.get("agent_id", flat) != flat:
            raise invalid("agent_id disagrees with scope.agent_id")
        return scope
    if "agent_id" in args:
        if not allow_flat:
            raise invalid("scope is required; the flat agent_id form is not accepted")
        flat = args["agent_id"]
        if not isinstance(flat, str) or not flat:
            raise invalid("agent_id must be a non-empty string")
        return {"agent_id": flat}
    raise invalid("a scope (or the legacy flat agent_id) is required")


def matches(stored: Mapping[str, str], requested: Mapping[str, str], *, strict: bool = True) -> bool:
    """Strict AND: every requested key is on the stored scope with an equal value.

    With ``strict=False`` (the ``scope-not-strict-and`` fault) a key missing on the stored side matches.
    """
    for key, value in requested.items():
        if key not in stored:
            if strict:
                return False
            continue
        if stored[key] != value:
            return False
    return True
