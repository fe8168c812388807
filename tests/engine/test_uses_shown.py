"""Issue 35: the shared steps a check declares (``@check(uses=...)``) are shown where a reader looks
for who shares what: ``--list`` (text and JSON), the JSON report and the HTML report's check detail."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from amp_conformance.cli import main
from amp_conformance.engine import report as report_writer
from amp_conformance.engine.check_registry import checks_of
from amp_conformance.engine.parallel import result_from_wire, result_to_wire
from amp_conformance.engine.report_model import Report
from amp_conformance.engine.resources import load_contract
from amp_conformance.engine.spec import CheckSpec
from amp_conformance.engine.verdict import RunFacts, judge
from amp_conformance.engine.vocabulary import Level
from amp_conformance.reports import render_html
from tests.reports.test_html import check, report

SNAPSHOTS = Path(__file__).resolve().parents[1] / "suite"


def _sharing_and_not(protocol: str) -> tuple[CheckSpec, CheckSpec]:
    specs = checks_of(protocol)
    sharing = next(s for s in specs if s.uses)
    alone = next(s for s in specs if not s.uses)
    return sharing, alone


def test_list_shows_the_steps_a_check_uses_in_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    sharing, alone = _sharing_and_not("amp-0.1")
    assert main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    first_lines = {line.split()[2]: line for line in lines[:-1:2]}
    assert first_lines[sharing.name].endswith(f"   uses: {', '.join(sharing.uses)}")
    assert "uses:" not in first_lines[alone.name]

    assert main(["--list", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(load_contract("list.schema.json")).validate(document)
    entries = {c["id"]: c for c in document["checks"]}
    assert entries[sharing.nodeid]["uses"] == list(sharing.uses)
    assert "uses" not in entries[alone.nodeid]


@pytest.mark.parametrize(("protocol", "snapshot"), [("amp-0.1", "amp01"), ("amp-1.1", "amp11")])
def test_the_list_snapshot_records_each_checks_steps(protocol: str, snapshot: str) -> None:
    """The snapshot's ``uses`` were added to it from the declarations (additions only): a check that
    starts or stops sharing a step is a deliberate change to the snapshot."""
    from amp_conformance.cli import list_checks

    before = json.loads((SNAPSHOTS / f"list_snapshot_{snapshot}.json").read_text())["checks"]
    now = {c["id"]: c for c in list_checks(protocol)}
    differ = {
        c["id"]: (c.get("uses"), now[c["id"]].get("uses"))
        for c in before
        if c.get("uses") != now[c["id"]].get("uses")
    }
    assert not differ, differ


def test_the_report_and_its_html_show_the_steps_a_check_used() -> None:
    spec = CheckSpec(("AMP-READ-02",), Level.MUST, "read", "a sharing check", uses=("read:the-cell",))
    result = judge(spec, None, None, RunFacts(), nodeid="test_read.py::test_x", name="test_x").result
    assert result.uses == ("read:the-cell",)
    assert result_from_wire(result_to_wire(result, None), None)[0].uses == ("read:the-cell",)
    entry = report_writer._check_entry(result, lambda exchange: pytest.fail("no exchange to render"))
    assert entry.to_json()["uses"] == ["read:the-cell"]

    sharing = check("pass", uses=list(entry.uses))
    alone = check("fail", rid="AMP-READ-03")
    model = Report.from_json(report([sharing, alone]))  # validated against report.schema.json
    assert model.checks[0].uses == ("read:the-cell",) and "uses" not in model.checks[1].to_json()
    page = render_html(model)
    assert page.count("Shared steps used:") == 1
    assert "Shared steps used: <code>read:the-cell</code>" in page
