"""``--badge PATH``: a shields.io endpoint JSON for a README badge (``contract/badge.schema.json``).

The label is the protocol's own (its record's ``label``, as the report carries it); the message
counts MUST checks that passed out of those that reached a verdict or errored (``MUST 174/174``); the
colour follows the verdict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amp_conformance.engine.report_model import Report, as_report
from amp_conformance.reports.output import write_report_file

COLOURS = {"pass": "brightgreen", "fail": "red", "incomplete": "orange"}
#: The colour of a column that has no report (it could not start).
NO_REPORT = "lightgrey"


def badge(report: Report | Mapping[str, Any]) -> dict[str, Any]:
    """The endpoint JSON of one report."""
    model = as_report(report)
    passed, total = model.must_tally()
    return {
        "schemaVersion": 1,
        "label": model.label,
        "message": f"MUST {passed}/{total}",
        "color": COLOURS.get(model.verdict, NO_REPORT),
    }


def write_badge(report: Report | Mapping[str, Any], path: Path) -> str | None:
    """Write the badge JSON; a one-line reason when the path cannot be written."""
    return write_report_file(path, json.dumps(badge(report)) + "\n", "the badge")
