"""Issue 35 §3: one typed report model. The writer builds it, ``to_json`` is the JSON it writes, and
``from_json`` reads a saved report once (validated against ``contract/report.schema.json``): the same
bytes come back, and anything else is one clear error."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.cli import main
from amp_conformance.engine.report import report_text
from amp_conformance.engine.report_model import Report, ReportError
from amp_conformance.reports.badge import badge


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("model")
    paths = {name: folder / name for name in ("r.json", "p.html")}
    mp = pytest.MonkeyPatch()
    mp.setenv("AMP_REFERENCE_FAULTS", "get-no-access-count")
    try:
        code = main(
            [
                "--no-fuzz",
                "-q",
                "--only",
                "read",
                "--json",
                str(paths["r.json"]),
                "--html",
                str(paths["p.html"]),
            ]
        )
    finally:
        mp.undo()
    assert code == 1
    return paths


def test_a_saved_report_reads_back_to_the_bytes_the_run_wrote(saved: dict[str, Path], tmp_path: Path) -> None:
    text = saved["r.json"].read_text(encoding="utf-8")
    report = Report.from_json(json.loads(text))
    assert report_text(report) == text
    assert report.protocol_title == "AMP v0.1.0" and report.protocol_label == "AMP 0.1.0"
    assert any(c.outcome == "fail" for c in report.checks)
    assert main(["report", str(saved["r.json"]), "--html", str(tmp_path / "again.html")]) == 0
    assert (tmp_path / "again.html").read_bytes() == saved["p.html"].read_bytes()


def test_the_model_is_frozen(saved: dict[str, Path]) -> None:
    report = Report.from_json(json.loads(saved["r.json"].read_text(encoding="utf-8")))
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.checks[0].outcome = "pass"  # type: ignore[misc]


def _broken(document: dict[str, Any], how: str) -> dict[str, Any]:
    data = copy.deepcopy(document)
    if how == "version":
        data["report_version"] = "3.0"
    elif how == "old":
        data["report_version"] = "1.0"
    elif how == "outcome":
        data["checks"][0]["outcome"] = "maybe"
    elif how == "missing":
        del data["summary"]
    return data


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("version", "has report_version '3.0'"),
        ("old", "has report_version '1.0'"),
        ("outcome", "at checks/0/outcome"),
        ("missing", '"summary" is a required property'),
    ],
)
def test_anything_else_is_one_clear_error(
    saved: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str, said: str
) -> None:
    data = _broken(json.loads(saved["r.json"].read_text(encoding="utf-8")), how)
    with pytest.raises(ReportError, match=None) as caught:
        Report.from_json(data)
    assert said in str(caught.value) and "\n" not in str(caught.value)
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    assert main(["report", str(source), "--badge", str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and not (tmp_path / "b.json").exists()


def test_a_report_without_the_protocol_record_members_falls_back(saved: dict[str, Path]) -> None:
    """Reports written before the record's title and label were carried still load: the installed
    registry's record names them, else the protocol's name does."""
    data = json.loads(saved["r.json"].read_text(encoding="utf-8"))
    del data["protocol_title"], data["protocol_label"]
    report = Report.from_json(data)
    assert (report.title, report.label) == ("AMP v0.1.0", "AMP 0.1.0")
    assert "protocol_title" not in report.to_json()
    data["protocol"] = "not-installed"
    assert badge(data)["label"] == "not-installed"
    data["protocol_label"] = "Ours 2"
    assert badge(data)["label"] == "Ours 2"
