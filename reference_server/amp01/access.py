"""Access control: one decision function, used identically by GET, PATCH, DELETE, search and list.

Read: public, the owner, the creator, or a ``readable_by`` match. Write: the owner, the creator, or a
``writable_by`` match (``public`` never grants write, and ``writable_by`` does not grant read).
Patterns are case-sensitive and ``*`` is the only special character: it matches any run of
characters, including none. ``?`` and ``[`` are literal (this is deliberately not fnmatch).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping
from typing import Any, Literal

from reference_server.amp01.faults import Faults

Action = Literal["read", "write"]


def pattern_matches(pattern: str, agent: str) -> bool:
    """Whether ``agent`` matches ``pattern`` as a whole, ``*`` matching any run of characters."""
    if "*" not in pattern:
        return pattern == agent
    parts = pattern.split("*")
    head, tail = parts[0], parts[-1]
    if len(agent) < len(head) + len(tail) or not agent.startswith(head) or not agent.endswith(tail):
        return False
    position, end = len(head), len(agent) - len(tail)
    for middle in parts[1:-1]:
        if not middle:
            continue
        found = agent.find(middle, position, end)
        if found < 0:
            return False
        position = found + len(middle)
    return True


def folded_id(value: str) -> str:
    """An id with letter case and Unicode compatibility forms folded away (the *-folded faults only:
    the spec compares ids byte for byte)."""
    return unicodedata.normalize("NFKC", value).casefold()


class AccessControl:
    """``allowed`` is the single decision; ``can_read``/``can_write`` name the two actions."""

    __slots__ = ("_creator_bypass", "_folded", "_owner_bypass", "_public_writes", "_replaced", "_substring")

    def __init__(self, faults: Faults) -> None:
        self._substring = faults.on("wildcard-substring")
        self._public_writes = faults.on("public-grants-write")
        self._creator_bypass = not faults.on("no-creator-bypass")
        self._owner_bypass = not faults.on("no-owner-bypass")
        self._folded = faults.on("identity-case-folded")
        self._replaced: set[tuple[str, Action]] = set()
        """(cell id, action) whose list a PATCH replaced (the policy-edit-drops-creator fault only)."""

    def policy_replaced(self, cell_id: str, members: Collection[str]) -> None:
        """The policy-edit-drops-creator fault: a PATCH replaced these access_policy members."""
        if "readable_by" in members:
            self._replaced.add((cell_id, "read"))
        if "writable_by" in members:
            self._replaced.add((cell_id, "write"))

    def _same(self, one: str, other: str) -> bool:
        return one.casefold() == other.casefold() if self._folded else one == other

    def _matches(self, pattern: str, agent: str) -> bool:
        if self._substring:  # fault: the pattern may match anywhere inside the id
            return pattern_matches(f"*{pattern}*", agent)
        return pattern_matches(pattern, agent)

    def allowed(self, cell: Mapping[str, Any], agent: str, action: Action) -> bool:
        identity = cell["identity"]
        if self._owner_bypass and self._same(identity["owner_id"], agent):
            return True
        creator = self._creator_bypass and self._same(identity["created_by"], agent)
        if creator and (cell["id"], action) not in self._replaced:
            return True
        policy = cell["access_policy"]
        if policy["public"] and (action == "read" or self._public_writes):
            return True
        patterns = policy["readable_by"] if action == "read" else policy["writable_by"]
        return any(self._matches(pattern, agent) for pattern in patterns)

    def can_read(self, cell: Mapping[str, Any], agent: str) -> bool:
        return self.allowed(cell, agent, "read")

    def can_write(self, cell: Mapping[str, Any], agent: str) -> bool:
        return self.allowed(cell, agent, "write")
