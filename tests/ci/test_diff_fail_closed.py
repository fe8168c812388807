"""``diff`` fails closed (issue 38 items 2 and 10): checks that are gone are regressions unless
``--allow-removed``; an INCOMPLETE run is never the new side of a clean diff; ``report OLD NEW --html``
refuses what ``diff`` refuses."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.cli import main


def _write(path: Path, report: dict[str, Any]) -> str:
    path.write_text(json.dumps(report), encoding="utf-8")
    return str(path)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


def test_removed_checks_are_regressions_unless_allowed(
    report_paths: dict[str, Path],
    clean_report: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    half = copy.deepcopy(clean_report)
    half["checks"] = half["checks"][: len(half["checks"]) // 2]
    shrunk = _write(tmp_path / "half.json", half)
    assert main(["diff", str(report_paths["clean"]), shrunk]) == 1
    out = capsys.readouterr().out
    assert out.startswith("REGRESSED") and "--allow-removed" in out
    assert main(["diff", str(report_paths["clean"]), shrunk, "--allow-removed"]) == 0
    assert capsys.readouterr().out.startswith("NO REGRESSION")


@pytest.mark.parametrize("kept", [0, 5])
def test_an_incomplete_run_is_never_the_new_side_of_a_clean_diff(
    kept: int,
    report_paths: dict[str, Path],
    clean_report: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cut = copy.deepcopy(clean_report)
    cut["checks"] = cut["checks"][:kept]
    cut["summary"]["verdict"] = "incomplete"
    incomplete = _write(tmp_path / "interrupted.json", cut)
    for extra in ([], ["--allow-removed"]):
        assert main(["diff", str(report_paths["clean"]), incomplete, *extra]) == 2
        line = _one_line(capsys)
        assert "interrupted.json" in line and "INCOMPLETE" in line
    # the old side may be incomplete: what the new run does is still compared
    assert main(["diff", incomplete, str(report_paths["clean"])]) in (0, 1)


def test_report_html_of_two_protocols_is_refused_as_diff_refuses_it(
    report_paths: dict[str, Path],
    clean_report: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    other = _write(tmp_path / "other.json", clean_report | {"protocol": "amp-1.1"})
    assert main(["diff", str(report_paths["clean"]), other]) == 2
    refused = _one_line(capsys)
    page = tmp_path / "diff.html"
    assert main(["report", str(report_paths["clean"]), other, "--html", str(page)]) == 2
    assert _one_line(capsys).split(": ", 1)[1] == refused.split(": ", 1)[1]
    assert not page.exists()
