"""``--badge PATH``: a shields.io endpoint JSON for a README badge (``contract/badge.schema.json``).

The message counts MUST checks that passed out of those that reached a verdict or errored
(``MUST 174/174``); the colour follows the verdict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amp_conformance.reports.markdown import must_tally
from amp_conformance.reports.output import write_report_file

COLOURS = {"pass": "brightgreen", "fail": "red", "incomplete": "orange"}
LABELS = {"amp-0.1": "AMP 0.1.0", "amp-1.1": "AMP 1.1"}


def badge(report: Mapping[str, Any]) -> dict[str, Any]:
    """The endpoint JSON of one report."""
    summary = report.get("summary")
    verdict = summary.get("verdict") if isinstance(summary, dict) else None
    protocol = report.get("protocol")
    passed, total = must_tally(report)
    return {
        "schemaVersion": 1,
        "label": LABELS.get(protocol if isinstance(protocol, str) else "", LABELS["amp-0.1"]),
        "message": f"MUST {passed}/{total}",
        "color": COLOURS.get(verdict if isinstance(verdict, str) else "", "lightgrey"),
    }


def write_badge(report: Mapping[str, Any], path: Path) -> str | None:
    """Write the badge JSON; a one-line reason when the path cannot be written."""
    return write_report_file(path, json.dumps(badge(report)) + "\n", "the badge")
