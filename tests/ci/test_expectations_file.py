"""The expectations file: parsing with line numbers, matching, stale entries, baselines."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from amp_conformance.engine.expectations import (
    ExpectationsError,
    baseline_text,
    load_expectations,
    parse_expectations,
    unexpected_pass,
)

PATH = Path("e.toml")
GOOD = """\
# known gaps
version = 1

[[expect]]
requirement = "AMP-LIST-05"
outcome = "fail"
reason = "clamps the limit"

[[expect]]
check = "test_list.py::test_limit_bounds_are_enforced_not_clamped"
outcome = "error"
reason = "times out on our CI"
link = "https://example.com/issues/7"

[[expect]]
check = "test_gone"
outcome = "warn"
reason = "a check that no longer exists"
"""


def test_a_good_file_parses_with_entry_lines() -> None:
    expectations = parse_expectations(GOOD, PATH)
    assert [(e.target, e.outcome, e.line) for e in expectations.entries] == [
        ("requirement AMP-LIST-05", "fail", 4),
        ("check test_list.py::test_limit_bounds_are_enforced_not_clamped", "error", 9),
        ("check test_gone", "warn", 15),
    ]
    assert expectations.entries[1].link == "https://example.com/issues/7"


def test_a_check_entry_wins_over_a_requirement_entry_and_ids_match_by_tail_or_name() -> None:
    expectations = parse_expectations(GOOD, PATH)
    nodeid = "amp_conformance/amp01/checks/test_list.py::test_limit_bounds_are_enforced_not_clamped"
    found = expectations.match(nodeid, "test_limit_bounds_are_enforced_not_clamped", ["AMP-LIST-05"])
    assert found is not None and found.outcome == "error"
    other = expectations.match("test_list.py::test_other", "test_other", ["AMP-LIST-05", "AMP-ERR-04"])
    assert other is not None and other.outcome == "fail"
    assert expectations.match("test_x.py::test_y", "test_y", ["AMP-READ-01"]) is None
    by_name = parse_expectations('[[expect]]\ncheck = "test_y"\noutcome = "skip"\nreason = "r"\n', PATH)
    assert by_name.match("test_x.py::test_y", "test_y", []) is not None
    assert by_name.match("test_x.py::test_yy", "test_yy", []) is None


def test_entries_matching_no_check_are_stale_with_their_line() -> None:
    expectations = parse_expectations(GOOD, PATH)
    expectations.match("test_list.py::test_other", "test_other", ["AMP-LIST-05"])
    stale = expectations.stale()
    assert [(s["target"], s["line"]) for s in stale] == [
        ("check test_list.py::test_limit_bounds_are_enforced_not_clamped", 9),
        ("check test_gone", 15),
    ]
    assert expectations.report_entry() == {"file": "e.toml", "stale": stale}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[expect]]\ncheck = "x"\noutcome = "fail"\nreason = "unterminated\n', "line 4"),
        (
            "[[expect]]\ncheck = 'x'\noutcome = 'broken'\nreason = 'r'\n",
            "(entry at line 1): expect/0/outcome: 'broken' is not one of",
        ),
        ("\n\n[[expect]]\ncheck = 'x'\noutcome = 'fail'\n", "(entry at line 3)"),
        ("[[expect]]\ncheck = 'x'\nrequirement = 'AMP-LIST-05'\noutcome = 'fail'\nreason = 'r'\n", "line 1"),
        ("[[expect]]\nrequirement = 'LIST-5'\noutcome = 'fail'\nreason = 'r'\n", "does not match"),
        ("[[expect]]\ncheck = 'x'\noutcome = 'fail'\nreason = 'r'\ntypo = 1\n", "Additional properties"),
        ("version = 2\n", "version"),
    ],
)
def test_malformed_files_name_the_line(text: str, message: str) -> None:
    with pytest.raises(ExpectationsError) as caught:
        parse_expectations(text, PATH)
    assert str(caught.value).startswith("e.toml")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_unreadable_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ExpectationsError, match="cannot read --expectations"):
        load_expectations(tmp_path)  # a directory


def test_a_missing_file_hints_at_write_expectations(tmp_path: Path) -> None:
    absent = tmp_path / "absent.toml"
    with pytest.raises(
        ExpectationsError, match=f"no such file; create it on a first run with --write-expectations {absent}"
    ):
        load_expectations(absent)


def test_unexpected_pass() -> None:
    entries = parse_expectations(GOOD, PATH).entries
    assert unexpected_pass(entries[0], "pass")
    assert not unexpected_pass(entries[0], "fail")
    assert entries[0].as_report("fail") == {
        "outcome": "fail",
        "reason": "clamps the limit",
        "link": None,
        "met": True,
    }
    assert entries[0].as_report("pass")["met"] is False


def test_a_baseline_lists_failures_and_round_trips_any_message() -> None:
    hostile = 'quote " backslash \\ newline \n tab \t bell \x07 del \x7f unicode \u00e9 \U0001f600 end'
    checks = [
        {
            "id": "test_a.py::test_fail",
            "outcome": "fail",
            "requirements": ["AMP-LIST-05"],
            "message": hostile,
        },
        {"id": "test_a.py::test_error", "outcome": "error", "requirements": ["AMP-ERR-01"], "message": ""},
        {"id": "test_a.py::test_blocked", "outcome": "blocked", "requirements": [], "message": "x"},
        {"id": "test_a.py::test_pass", "outcome": "pass", "requirements": ["AMP-READ-01"], "message": ""},
        {"id": "test_a.py::test_warn", "outcome": "warn", "requirements": ["AMP-READ-02"], "message": ""},
    ]
    text = baseline_text(checks, source="run X")
    tomllib.loads(text)
    entries = parse_expectations(text, PATH).entries
    assert [(e.check, e.outcome) for e in entries] == [
        ("test_a.py::test_fail", "fail"),
        ("test_a.py::test_error", "error"),
    ]
    assert entries[0].reason.startswith('AMP-LIST-05: quote " backslash \\ newline')


def test_a_re_baseline_of_the_same_findings_is_the_same_text() -> None:
    """Issue 38 item 20: no port, run namespace, server-made id or date in a generated baseline."""

    def run(port: int, ulid: str) -> list[dict[str, object]]:
        message = (
            f"GET http://127.0.0.1:{port}/amp/v1/memories/mem_{ulid} as amp-ct-{ulid.lower()}-gw1-a "
            "answered 500"
        )
        return [
            {
                "id": "test_a.py::test_x",
                "outcome": "fail",
                "requirements": ["AMP-READ-01"],
                "message": message,
            }
        ]

    first = baseline_text(run(41234, "01KBQ4Z1S2T3V4W5X6Y7Z8A9B0"))
    second = baseline_text(run(51999, "01KBQ5A1B2C3D4E5F6G7H8J9K0"))
    assert first == second
    assert "127.0.0.1" not in first and "01KBQ" not in first.upper()
    assert parse_expectations(first, PATH).entries[0].reason == (
        "AMP-READ-01: GET <server>/amp/v1/memories/mem_<ulid> as <run>-a answered 500"
    )
