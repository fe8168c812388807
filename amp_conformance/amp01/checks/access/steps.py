"""The access checks' shared steps other check modules use too (declared once, here)."""

from __future__ import annotations

from typing import Any

from ulid import ULID

from amp_conformance import Amp01Context
from amp_conformance.engine.client import Reply
from amp_conformance.engine.steps import Recorder, Step


def _make_policy_cell(amp: Amp01Context, rec: Recorder) -> dict[str, Any]:
    """A default-policy cell created by agent "a" for a fresh owner: the cell whose readable_by the
    policy check (AMP-ACL-12) edits, which always makes it first (the first check of its unit)."""
    text = f"policy change probe {str(ULID()).lower()}"
    owner = amp.owner()
    return {
        "owner": owner,
        "cell": amp.create_cell({"content": {"text": text}, "identity": {"owner_id": owner}}),
    }


#: The policy check's cell. The identity module's case-variant and creator checks take it over once
#: that check is done with it (``POLICY_CELL.made``): it only ever named agent "b" in readable_by (the
#: default policy again once it removed it), which no probe there uses. Declared by all three, so a
#: parallel run keeps them in one unit, in a serial run's order: the same requests either way.
POLICY_CELL: Step[Amp01Context, dict[str, Any], Reply] = Step(
    "acl:policy-change-cell", _make_policy_cell, roles=("a",), reply=Reply
)
