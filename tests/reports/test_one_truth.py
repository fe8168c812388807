"""Issue 38 items 7-9: every output of one run tells the same truth. For a self-test and a faulty run
of each protocol, the terminal (its tables, its failure lines and the suite's closing line), the JSON
report, JUnit, Markdown and HTML name the same failing requirements at the same levels and the same
six counts. Each output is parsed as a reader would, not through the model."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.engine import vocabulary

pytestmark = pytest.mark.slow

RUNS = {
    "amp01-self-test": ("amp-0.1", {}),
    "amp01-limit-clamped": ("amp-0.1", {"AMP_REFERENCE_FAULTS": "limit-clamped"}),
    "amp11-self-test": ("amp-1.1", {}),
    "amp11-recall-scope-leak": ("amp-1.1", {"AMP11_REFERENCE_FAULTS": "recall-scope-leak"}),
}
OUTCOMES = tuple(str(outcome) for outcome in vocabulary.OUTCOMES)
WORDS = {"pass": "passed", "fail": "failed", "warn": "warned", "skip": "skipped"}


def _run(tmp_path: Path, protocol: str, env: dict[str, str]) -> dict[str, Any]:
    paths = {kind: tmp_path / f"r.{kind}" for kind in ("json", "html", "xml", "md")}
    flags = {"json": "--json", "html": "--html", "xml": "--junit", "md": "--markdown"}
    outputs = [item for kind, path in paths.items() for item in (flags[kind], str(path))]
    clean = {k: v for k, v in os.environ.items() if not k.endswith("REFERENCE_FAULTS")}
    done = subprocess.run(
        [sys.executable, "-m", "amp_conformance", "--protocol", protocol, *outputs],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**clean, **env, "NO_COLOR": "1"},
    )
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    texts: dict[str, Any] = {kind: path.read_text(encoding="utf-8") for kind, path in paths.items()}
    texts["terminal"] = done.stdout
    return texts


def _terminal(text: str) -> tuple[dict[str, int], dict[str, int], dict[str, str], set[str]]:
    """(the table's total row, the closing line's counts, id -> level of the finding lines, failing ids)."""
    lines = text.splitlines()
    header = next(line.split()[1:] for line in lines if line.split()[:1] == ["area"])
    total = next(line.split()[1:] for line in lines if line.split()[:1] == ["total"])
    table = {outcome: int(n) for outcome, n in zip(header, total, strict=True)}
    closing = re.search(r"^(\d+) checks: (.*?)(?: \(expectations file: .*\))? in [\d.]+s", text, re.MULTILINE)
    assert closing is not None, text[-2000:]
    said = dict((word, int(n)) for n, word in (part.split(" ", 1) for part in closing.group(2).split(", ")))
    counts = {outcome: said[WORDS.get(outcome, outcome)] for outcome in OUTCOMES}
    assert int(closing.group(1)) == sum(counts.values())
    levels: dict[str, str] = {}
    failing: set[str] = set()
    for match in re.finditer(r"^  (FAIL|WARN) +(\S+) \((MUST|SHOULD|MAY)\)", text, re.MULTILINE):
        for rid in match.group(2).split(","):
            levels[rid] = match.group(3)
            if match.group(1) == "FAIL":
                failing.add(rid)
    return table, counts, levels, failing


def _markdown(text: str) -> tuple[dict[str, int], dict[str, str]]:
    """(the six counts, summed over the By level table; failing requirement -> level)."""
    unescaped = re.sub(r"\\(.)", r"\1", text)
    section = unescaped.split("### By level", 1)[1].split("###", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in rows[0]][1:]
    counts = dict.fromkeys(header, 0)
    for row in rows[1:]:
        for outcome, cell in zip(header, row[1:], strict=True):
            counts[outcome] += int(cell)
    failing: dict[str, str] = {}
    if "### Failing requirements" in unescaped:
        table = unescaped.split("### Failing requirements", 1)[1].split("###", 1)[0]
        for line in table.splitlines()[4:]:
            if line.startswith("| "):
                cells = [cell.strip() for cell in line.strip("|").split("|")]
                failing[cells[0]] = cells[1]
    return counts, failing


def _html(text: str) -> tuple[dict[str, int], dict[str, tuple[str, str]]]:
    """(the header's counts, grid id -> (outcome, level))."""
    counts = {o: int(n) for o, n in re.findall(r'<td data-count="(\w+)">(\d+)</td>', text)}
    grid = {
        rid: (outcome, level)
        for outcome, rid, level in re.findall(
            r'class="req o-(\w+)" id="g-([^"]+)"[^>]*?data-level="(\w+)"', text
        )
    }
    return counts, grid


def _junit(text: str) -> tuple[dict[str, int], dict[str, str]]:
    suite = ET.fromstring(text).find("testsuite")
    assert suite is not None
    properties = {p.get("name", ""): p.get("value", "") for p in suite.iter("property")}
    return {o: int(properties[f"amp_{o}"]) for o in OUTCOMES}, dict(suite.attrib)


@pytest.mark.parametrize("name", list(RUNS))
def test_every_output_states_the_same_levels_outcomes_and_counts(tmp_path: Path, name: str) -> None:
    protocol, env = RUNS[name]
    texts = _run(tmp_path, protocol, env)
    report = json.loads(texts["json"])
    counts = {outcome: report["summary"]["outcomes"][outcome] for outcome in OUTCOMES}
    levels = {r["id"]: r["level"] for r in report["catalogue"]["requirements"]}
    failing = {
        rid
        for check in report["checks"]
        if check["outcome"] == "fail"
        for rid in check["finding_requirements"] or check["requirements"]
    }
    if env:
        assert failing, "a faulty run fails a requirement"
    else:
        assert not failing and counts["fail"] == 0

    table, closing, terminal_levels, terminal_failing = _terminal(texts["terminal"])
    assert table == counts and closing == counts
    assert terminal_failing == failing
    assert {rid: levels[rid] for rid in terminal_levels} == terminal_levels

    markdown_counts, markdown_failing = _markdown(texts["md"])
    assert markdown_counts == counts
    assert set(markdown_failing) == failing
    assert markdown_failing == {rid: levels[rid] for rid in failing}

    html_counts, grid = _html(texts["html"])
    assert html_counts == counts
    assert {rid for rid, (outcome, _) in grid.items() if outcome == "fail"} == failing
    assert {rid: level for rid, (_, level) in grid.items()} == levels

    junit_counts, attributes = _junit(texts["xml"])
    assert junit_counts == counts
    assert int(attributes["failures"]) == counts["fail"]  # no expectations file: every failure counts
    assert int(attributes["errors"]) == counts["error"]
    assert int(attributes["skipped"]) == counts["skip"] + counts["blocked"]
    assert int(attributes["tests"]) == sum(counts.values()) == report["summary"]["total"]

    if protocol == "amp-0.1":  # item 8: one level per requirement, the one the run's checks apply
        assert levels["AMP-ACL-11"] == grid["AMP-ACL-11"][1] == "SHOULD"
        oas = {c["level"] for c in report["checks"] if c["requirements"] == ["AMP-OAS-02"]}
        assert {grid["AMP-OAS-02"][1]} == oas
