"""Which AMP v0.1.0 requirement a cell problem breaks: one table for the suite and the validator.

A problem found by ``validate_cell`` (a JSON path and a code) is filed under the rule it breaks, so a
cell judged by a check and the same cell given to ``amp-conformance validate`` get the same verdict.
The catalogue is the authority on levels: a member only AMP-CELL-03 (a SHOULD) asks for is a warning;
a member the upstream cell schema requires is a MUST of the requirement named here.
"""

from __future__ import annotations

from typing import Final

#: Members the upstream schema (spec/upstream/memory-cell.schema.json) requires, with the
#: requirement their absence breaks.
UPSTREAM_REQUIRED: Final = {
    "$.amp_version": "AMP-CELL-02",
    "$.id": "AMP-CELL-02",
    "$.type": "AMP-CELL-02",
    "$.content": "AMP-CELL-02",
    "$.identity": "AMP-CELL-02",
    "$.lifecycle": "AMP-CELL-02",
    "$.content.text": "AMP-CELL-17",
    "$.identity.owner_id": "AMP-CELL-01",
    "$.identity.owner_type": "AMP-CELL-01",
    "$.lifecycle.created_at": "AMP-CELL-01",
}
#: A problem's path (longest matching prefix first) -> the requirement a wrong value breaks.
BY_PATH: Final = (
    ("$.amp_version", "AMP-CELL-04"),
    ("$.id", "AMP-CELL-05"),
    ("$.type", "AMP-CELL-08"),
    ("$.identity.owner_type", "AMP-CELL-09"),
    ("$.lifecycle.status", "AMP-CELL-10"),
    ("$.lifecycle.", "AMP-CELL-18"),
    ("$.provenance.", "AMP-CELL-11"),
    ("$.scoring.importance", "AMP-CELL-12"),
    ("$.scoring.confidence", "AMP-CELL-12"),
    ("$.scoring.decay_rate", "AMP-CELL-13"),
    ("$.scoring.access_count", "AMP-CELL-14"),
    ("$.content", "AMP-CELL-17"),
)
#: Codes that name their rule whatever the path.
BY_CODE: Final = {
    "timestamp-format": "AMP-CELL-18",
    "timestamp-not-utc": "AMP-CELL-18",
    "timestamp-order": "AMP-CELL-20",
    "decay-score": "AMP-LC-01",
    "unknown-member": "AMP-CELL-01",
}


def cell_requirement(path: str, code: str) -> str:
    """The requirement a cell problem (JSON path, code) breaks."""
    if code == "missing-member":
        # the bundled schema requires every member; the upstream one only these (issue 10 §3)
        return UPSTREAM_REQUIRED.get(path, "AMP-CELL-03")
    if code in BY_CODE:
        return BY_CODE[code]
    for prefix, requirement in BY_PATH:
        if path == prefix or (
            path.startswith(prefix) and (prefix.endswith(".") or path[len(prefix)] in ".[")
        ):
            return requirement
    return "AMP-CELL-01"
