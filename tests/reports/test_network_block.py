"""Issue 36 §3 and §4: the report says what the network did (``network``) and what the cleanup left on
the server (``cleanup.left``), in the JSON, the terminal's closing lines, the Markdown and the HTML page;
apart from the verdict, never a finding, and server text escaped everywhere."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.amp01.session import Amp01Session
from amp_conformance.cli import main
from amp_conformance.engine.network import NetworkLog
from amp_conformance.engine.report import report_text
from amp_conformance.engine.report_model import Report, ReportError, left_count_line
from amp_conformance.reports.html import render_html
from amp_conformance.reports.markdown import render_markdown_summary
from tests.reports.builder import complete

HOSTILE = '<script>alert("x")</script>'


def _network() -> dict[str, Any]:
    log = NetworkLog()
    for kind in ("reset", "reset", "cut", "timeout"):
        log.count_broken(kind)
    log.count_repeated()
    log.count_reconciled()
    log.count_rerun("test_rate.py::test_budget")
    log.count_unrecovered()
    return log.as_block()


def _new_report() -> dict[str, Any]:
    document = complete({"checks": [{"name": "test_a"}, {"name": "test_b", "outcome": "error"}]})
    document["network"] = _network()
    document["cleanup"] = {
        "attempted": 3,
        "deleted": 1,
        "problems": [],
        "left": [
            {"id": "mem_1", "reason": "DELETE answered 409 after its archive PATCH was lost"},
            {"id": HOSTILE, "reason": f"the server said {HOSTILE} | `code` *x*"},
        ],
    }
    return document


def test_an_old_report_without_the_blocks_stays_valid_and_reads_back_as_it_was() -> None:
    old = complete({"checks": [{"name": "test_a"}]})
    assert "left" not in old["cleanup"] and "network" not in old
    report = Report.from_json(old)
    assert report.network is None and report.cleanup.left == () and left_count_line(report.cleanup) is None
    written = report.to_json()
    assert "network" not in written and written["cleanup"] == {**old["cleanup"], "left": []}
    assert {**written, "cleanup": old["cleanup"]} == old


def test_a_report_with_the_blocks_reads_back_key_for_key_and_byte_for_byte() -> None:
    document = _new_report()
    report = Report.from_json(document)
    assert report.network is not None and report.network.exchanges_broken == 4
    assert report.network.summary == "network: 4 exchanges broken, 3 recovered, 1 not (checks errored)"
    assert left_count_line(report.cleanup) == "cleanup: 2 cells left on the server"
    assert report.to_json() == document
    text = report_text(report)
    assert report_text(Report.from_json(json.loads(text))) == text
    empty = copy.deepcopy(document)
    empty["cleanup"]["left"] = []  # an empty list stays (and says nothing in the summaries)
    assert Report.from_json(empty).to_json() == empty
    assert left_count_line(Report.from_json(empty).cleanup) is None


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("network", "repeated"), -1),
        (("network", "summary"), None),
        (("network", "rerun"), "test_a"),
        (("cleanup", "left"), [{"id": "mem_1"}]),
        (("cleanup", "left"), [{"id": "mem_1", "reason": "x", "extra": 1}]),
    ],
)
def test_a_malformed_block_is_refused(path: tuple[str, str], value: Any) -> None:
    document = _new_report()
    document[path[0]][path[1]] = value
    with pytest.raises(ReportError, match=path[0]):
        Report.from_json(document)


def test_the_blocks_change_no_verdict_and_no_count() -> None:
    plain = complete({"checks": [{"name": "test_a"}, {"name": "test_b", "outcome": "error"}]})
    with_blocks = Report.from_json(_new_report())
    assert with_blocks.summary == Report.from_json(plain).summary
    assert [c.to_json() for c in with_blocks.checks] == plain["checks"]


def test_markdown_and_html_show_both_blocks_escaped() -> None:
    report = Report.from_json(_new_report())
    markdown = render_markdown_summary(report)
    assert "### Network" in markdown
    assert "network: 4 exchanges broken, 3 recovered, 1 not \\(checks errored\\)" in markdown
    assert "| broken\\, by kind | 2 reset\\, 1 cut\\, 1 timeout |" in markdown
    assert "| checks re\\-run | test\\_rate\\.py\\:\\:test\\_budget |" in markdown
    assert "### cleanup: 2 cells left on the server" in markdown
    assert "<script>" not in markdown and "&lt;script&gt;" in markdown and "\\`code\\`" in markdown
    page = render_html(report)
    assert (
        page.count("network: 4 exchanges broken, 3 recovered, 1 not (checks errored)") == 2
    )  # facts, section
    assert "<dt>checks re-run</dt><dd>test_rate.py::test_budget</dd>" in page
    assert "cleanup: 2 cells left on the server" in page
    assert "<code>mem_1</code>: DELETE answered 409 after its archive PATCH was lost" in page
    assert HOSTILE not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    plain = Report.from_json(complete({"checks": [{"name": "test_a"}]}))
    assert "Network" not in render_markdown_summary(plain) and "cells left" not in render_html(plain)


@pytest.mark.parametrize("among_problems", [False, True], ids=["left-only", "also-a-problem"])
def test_the_terminal_says_both_apart_from_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, among_problems: bool
) -> None:
    """A run whose session reports the blocks (engineers A and E fill them): the terminal's closing
    lines say them, the JSON carries them, the verdict is the run's own; a session that says the
    cells left among its problems too has them said once."""
    original = Amp01Session.report_blocks
    reason = f"DELETE answered 409 {HOSTILE}\x1b[2J"

    def with_blocks(self: Amp01Session) -> dict[str, Any]:
        blocks = original(self)
        cleanup = dict(blocks["cleanup"])
        cleanup["left"] = [{"id": "mem_left", "reason": reason}]
        if among_problems:
            line = f"cleanup: 1 cell left on the server: mem_left ({reason})"
            cleanup["problems"] = [line, *cleanup["problems"]]
        return {**blocks, "cleanup": cleanup, "network": _network()}

    monkeypatch.setattr(Amp01Session, "report_blocks", with_blocks)
    path = tmp_path / "r.json"
    assert main(["--no-fuzz", "--only", "health", "--json", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("verdict: "))
    assert lines[verdict] == "verdict: PASS: every MUST check passed"
    assert lines[verdict - 2 : verdict] == [
        "network: 4 exchanges broken, 3 recovered, 1 not (checks errored)",
        "cleanup: 1 cell left on the server",
    ]
    named = [line for line in lines if line.startswith("  cleanup: 1 cell left on the server: mem_left (")]
    assert len(named) == 1 and "\x1b" not in named[0]  # said once, server text made printable
    report = Report.from_json(json.loads(path.read_text(encoding="utf-8")))
    assert report.network is not None and report.network.to_json() == _network()
    assert [entry["id"] for entry in report.cleanup.left] == ["mem_left"]
    assert report.summary.verdict == "pass" and report.summary.errors == 0
