"""Badges per implementation and ``--site DIR``: the matrix page, each run's own page, linked.

A site is::

    DIR/index.html             the matrix page (each column's name links to its run's page)
    DIR/matrix.json            the matrix report
    DIR/<slug>.html            that implementation's own report page (reports.html, as `report` renders)
    DIR/reports/<slug>.json    its JSON report (and .log)
    DIR/badges/<slug>.json     its shields.io endpoint badge
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amp_conformance.engine import registry
from amp_conformance.engine.report_model import Report
from amp_conformance.matrix.config import ConfigError
from amp_conformance.matrix.running import RunResult
from amp_conformance.reports.badge import COLOURS, NO_REPORT, badge
from amp_conformance.reports.html import render_html
from amp_conformance.reports.html_model import as_dict, as_list, as_text


def protocol_label(protocol: str) -> str:
    """The badge label of a column with no report: its installed protocol record's, else its name."""
    try:
        record = registry.get(protocol)
    except (KeyError, ImportError, TypeError):
        return protocol
    return record.label or record.title


def implementation_badge(impl: Mapping[str, Any], report: Report | None) -> dict[str, Any]:
    """The shields endpoint JSON of one column (``contract/badge.schema.json``, as ``--badge`` writes
    it; the file is named by the implementation's slug)."""
    if report is None:
        label = protocol_label(as_text(impl.get("protocol")))
        return {"schemaVersion": 1, "label": label, "message": "MUST 0/0", "color": NO_REPORT}
    document = badge(report)
    document["color"] = COLOURS.get(as_text(impl.get("verdict")), document["color"])
    return document


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None


def write_badges(matrix: Mapping[str, Any], reports: Mapping[str, Report], directory: Path) -> None:
    for impl in (as_dict(i) for i in as_list(matrix.get("implementations"))):
        slug = as_text(impl.get("slug"))
        document = implementation_badge(impl, reports.get(slug))
        _write(directory / f"{slug}.json", json.dumps(document) + "\n")


def write_site(matrix: dict[str, Any], results: list[RunResult], directory: Path) -> None:
    """Write the site (see the module docstring) from a matrix and its runs."""
    from amp_conformance.matrix.html import render_matrix_html

    reports: dict[str, Report] = {}
    links: dict[str, str] = {}
    site_matrix = json.loads(json.dumps(matrix))
    for result, impl in zip(results, site_matrix["implementations"], strict=True):
        slug = result.implementation.slug
        if result.report is None:
            continue
        reports[slug] = result.report
        links[slug] = f"{slug}.html"
        target = directory / "reports" / f"{slug}.json"
        if result.report_path.resolve() != target.resolve():
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(result.report_path, target)
            except OSError as exc:
                raise ConfigError(f"cannot write {target}: {exc.strerror or exc}") from None
        impl["report"] = f"reports/{slug}.json"
        _write(directory / f"{slug}.html", render_html(result.report))
    _write(directory / "matrix.json", json.dumps(site_matrix, indent=1, ensure_ascii=False) + "\n")
    write_badges(site_matrix, reports, directory / "badges")
    _write(directory / "index.html", render_matrix_html(site_matrix, reports, links=links))
