"""Issue 23 §3: the JUnit report, read with junitparser as GitLab and Jenkins would, and the
``report`` subcommand rendering every format of a saved run exactly as the live run wrote it."""

from __future__ import annotations

import json
from pathlib import Path

import junitparser
import pytest
import xmlschema

from amp_conformance.cli import main
from amp_conformance.reports.junit import render_junit
from tests.ci.helpers import validate
from tests.reports.builder import complete

#: The structure Jenkins' and GitLab's readers take (the file says where each rule comes from).
JUNIT_SCHEMA = xmlschema.XMLSchema(
    str(Path(__file__).parents[2] / "amp_conformance" / "contract" / "junit.xsd")
)


def _properties(case: junitparser.TestCase) -> list[junitparser.Property]:
    """A testcase's properties (junitparser reads them on suites; on a testcase, by element)."""
    block = case.child(junitparser.Properties)
    return list(block) if block is not None else []


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A self-test run with a MUST failure and SHOULD findings, writing every format."""
    folder = tmp_path_factory.mktemp("live")
    paths = {name: folder / name for name in ("r.json", "j.xml", "s.md", "b.json", "p.html")}
    mp = pytest.MonkeyPatch()
    mp.setenv("AMP_REFERENCE_FAULTS", "get-no-access-count")
    try:
        code = main(
            [
                "--no-fuzz",
                "-q",
                "--only",
                "read,cre",
                "--json",
                str(paths["r.json"]),
                "--junit",
                str(paths["j.xml"]),
                "--markdown",
                str(paths["s.md"]),
                "--badge",
                str(paths["b.json"]),
            ]
        )
    finally:
        mp.undo()
    assert code == 1
    return paths


def test_junit_names_the_suite_and_carries_ids_levels_warnings_and_skips(live: dict[str, Path]) -> None:
    report = json.loads(live["r.json"].read_text())
    xml = junitparser.JUnitXml.fromfile(str(live["j.xml"]))
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    assert suite.name == f"amp-conformance amp-0.1 {report['server']['base_url']}"
    cases = {case.name: case for case in suite}
    assert len(cases) == len(report["checks"]) == suite.tests
    for check in report["checks"]:
        case = cases[check["name"]]
        props = {p.name: p.value for p in _properties(case)}
        assert props["amp_requirements"] == ",".join(check["requirements"])
        assert props["amp_level"] == check["level"] and props["amp_outcome"] == check["outcome"]
        kinds = {type(r).__name__ for r in case.result}
        if check["outcome"] == "fail":
            assert kinds == {"Failure"} and check["message"] in case.result[0].message
        elif check["outcome"] in ("skip", "blocked"):
            assert kinds == {"Skipped"} and case.result[0].message
        elif check["outcome"] == "warn":
            assert not kinds  # visible, not failing
            assert any(p.name == "amp_warning" for p in _properties(case))
            assert case.system_out and "WARN" in case.system_out
    assert suite.failures == sum(1 for c in report["checks"] if c["outcome"] == "fail") >= 1
    assert any(c["outcome"] == "warn" for c in report["checks"])


def test_the_live_junit_file_is_valid_against_the_schema_ci_readers_take(live: dict[str, Path]) -> None:
    JUNIT_SCHEMA.validate(str(live["j.xml"]))


@pytest.mark.parametrize(
    ("outcome", "extra"),
    [
        ("blocked", {"blocked_by": {"requirement": "AMP-CRE-01", "step": "create"}}),
        ("error", {"message": "no verdict: \x00 \x1b[31m <b>&"}),
        ("fail", {"expectation": {"met": True, "reason": "known gap"}}),
        ("skip", {"message": ""}),
        (
            "warn",
            {"warnings": [{"requirements": ["AMP-X-01"], "level": "SHOULD", "message": "w", "curl": "c"}]},
        ),
    ],
)
def test_every_outcome_renders_valid_junit(outcome: str, extra: dict[str, object]) -> None:
    check = {"id": "t.py::t", "name": "t", "area": "read", "outcome": outcome, "level": "MUST"}
    check.update(extra)
    report = {"protocol": "amp-0.1", "server": {"base_url": "http://x"}, "checks": [check], "run": {}}
    JUNIT_SCHEMA.validate(render_junit(complete(report)))


def test_the_schema_refuses_what_jenkins_would_not_read() -> None:
    """The schema can fail: a testsuite without its counts, a testcase without a name."""
    for bad in (
        '<testsuites><testsuite name="s"><testcase name="c"/></testsuite></testsuites>',
        '<testsuites><testsuite name="s" tests="1" failures="0" errors="0">'
        "<testcase/></testsuite></testsuites>",
        '<testsuites skipped="1"/>',
    ):
        assert not JUNIT_SCHEMA.is_valid(bad), bad


def test_a_promoted_root_cause_is_a_failure() -> None:
    check = {
        "id": "test_x.py::test_root",
        "name": "test_root",
        "area": "read",
        "outcome": "fail",
        "level": "MUST",
        "requirements": ["AMP-READ-01"],
        "finding_requirements": ["AMP-CRE-01"],
        "message": "create failed: the step every read needs",
        "blocked_by": None,
        "warnings": [],
    }
    report = {"protocol": "amp-0.1", "server": {"base_url": "http://x"}, "checks": [check], "run": {}}
    suite = next(iter(junitparser.JUnitXml.fromstring(render_junit(complete(report)))))
    case = next(iter(suite))
    assert [type(r).__name__ for r in case.result] == ["Failure"]


def test_report_renders_every_format_as_the_live_run_wrote_it(live: dict[str, Path], tmp_path: Path) -> None:
    again = {name: tmp_path / name for name in ("j.xml", "s.md", "b.json")}
    code = main(
        [
            "report",
            str(live["r.json"]),
            "--junit",
            str(again["j.xml"]),
            "--markdown",
            str(again["s.md"]),
            "--badge",
            str(again["b.json"]),
        ]
    )
    assert code == 0
    for name, path in again.items():
        assert path.read_bytes() == live[name].read_bytes(), name
    JUNIT_SCHEMA.validate(str(again["j.xml"]))
    validate(json.loads(again["b.json"].read_text()), "badge.schema.json")


def test_report_needs_an_output(capsys: pytest.CaptureFixture[str], live: dict[str, Path]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(live["r.json"])])
    assert exit_info.value.code == 2
    assert "give at least one of --html" in capsys.readouterr().err
