"""The HTML report without a browser: structure, escaping, the CSP hashes, size bounds, tolerance of
odd reports, and the ``report`` subcommand's handling of bad input."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amp_conformance.cli import main
from amp_conformance.engine.report_model import Report, ReportError
from amp_conformance.reports import render_diff_html, render_html
from amp_conformance.reports.cli import report_main
from amp_conformance.reports.html import MAX_PAGE_BYTES
from amp_conformance.reports.html_diff import minimal_diff
from amp_conformance.reports.html_model import read_catalogue
from tests.reports.builder import complete
from tests.suite.inprocess import run_against_reference

HOSTILE = '<script>alert(1)</script><img src=x onerror=alert(2)><a href="javascript:alert(3)">x</a>"\'&'
#: Elements the page itself uses; anything else in the parsed page was injected.
PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "main", "section", "h1", "h2", "h3", "h4",
    "h5", "p", "span", "strong", "b", "code", "pre", "dl", "dt", "dd", "ul", "ol", "li", "table", "caption",
    "thead", "tbody", "tr", "th", "td", "details", "summary", "div", "a", "form", "fieldset", "legend",
    "label", "input", "select", "option", "button", "script", "br",
}  # fmt: skip


class Page(HTMLParser):
    """The parsed page: tags, attributes and inline script/style text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline: dict[str, list[str]] = {"script": [], "style": []}
        self._in: str | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in self.inline else None

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.inline[self._in].append(data)

    def with_class(self, name: str) -> list[dict[str, str | None]]:
        return [attrs for _, attrs in self.tags if name in (attrs.get("class") or "").split()]


def exchange(body: str = '{"ok": true}', status: int = 200) -> dict[str, Any]:
    return {
        "method": "GET",
        "url": "http://127.0.0.1:9/amp/v1/memories/x",
        "request_headers": {"X-AMP-Agent-ID": "a"},
        "request_body": None,
        "status": status,
        "response_headers": {"content-type": "application/json"},
        "response_body": body,
        "elapsed_ms": 1.5,
        "error": None,
        "curl": "curl -sS -i -X GET http://127.0.0.1:9/amp/v1/memories/x",
    }


def check(outcome: str, rid: str = "AMP-READ-02", **extra: Any) -> dict[str, Any]:
    entry = {
        "id": f"test_read.py::test_{outcome}_{rid}",
        "name": f"test_{outcome}_{rid}",
        "title": f"A {outcome} check",
        "requirements": [rid],
        "level": "MUST",
        "area": rid.split("-")[1].lower(),
        "outcome": outcome,
        "message": "" if outcome == "pass" else f"{outcome}: got something else",
        "duration_seconds": 0.01,
        "warnings": [],
        "notes": [],
        "curl": None,
        "exchanges": [exchange()],
    }
    entry.update(extra)
    return entry


def report(checks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    counts = {
        o: sum(1 for c in checks if c.get("outcome") == o) for o in ("pass", "fail", "warn", "skip", "error")
    }
    data: dict[str, Any] = {
        "report_version": "1.0",
        "tool": {"name": "amp-conformance", "version": "0.1.0"},
        "run": {"started_at": "2026-01-01T00:00:00Z", "duration_seconds": 1.0},
        "server": {"base_url": "http://127.0.0.1:9/amp/v1", "spec": {"amp_version": "0.1.0"}},
        "conventions": None,
        "summary": {
            "total": len(checks),
            "outcomes": counts,
            "verdict": "fail" if counts["fail"] else "pass",
        },
        "checks": checks,
        "cleanup": {"attempted": 0, "deleted": 0, "problems": []},
    }
    data.update(extra)
    return complete(data)


def hostile_report() -> dict[str, Any]:
    bad = exchange(body=HOSTILE, status=500)
    bad["response_headers"] = {"x-debug": HOSTILE, HOSTILE: "value"}
    bad["url"] = "javascript:alert(4)"
    bad["curl"] = f"curl '{HOSTILE}'"
    failing = check("fail", message=HOSTILE, curl=bad["curl"], exchanges=[bad, exchange(body=HOSTILE)])
    failing["title"] = HOSTILE
    failing["notes"] = [HOSTILE]
    # ids, outcomes and counts are the tool's own (a report is validated when read): the server's
    # text is everywhere else
    failing["warnings"] = [{"message": HOSTILE, "requirements": ["AMP-READ-03"], "curl": HOSTILE}]
    failing["blocked_by"] = {"check": HOSTILE, "requirement": "AMP-READ-03", "step": HOSTILE}
    failing["expectation"] = {
        "outcome": "fail",
        "reason": HOSTILE,
        "link": "javascript:alert(5)",
        "met": False,
    }
    failing["expected"] = HOSTILE
    return report(
        [failing, check("pass", notes=[HOSTILE])],
        server={
            "base_url": HOSTILE,
            "spec": {HOSTILE: HOSTILE},
            "spec_error": HOSTILE,
            "unavailable": HOSTILE,
        },
        conventions={HOSTILE: {"value": HOSTILE, "source": HOSTILE}, "problems": [HOSTILE]},
        cleanup={"attempted": 0, "deleted": 0, "problems": [HOSTILE]},
        expectations={"file": HOSTILE, "stale": [HOSTILE]},
    )


def assert_inert(page: Page) -> None:
    """Only the page's own elements; no handler attributes; no URL outside the page."""
    assert {tag for tag, _ in page.tags} <= PAGE_TAGS
    assert [tag for tag, _ in page.tags].count("script") == 1
    for tag, attrs in page.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert "src" not in attrs
        href = attrs.get("href")
        assert href is None or href.startswith("#"), href


def test_everything_from_the_server_is_text() -> None:
    text = render_html(hostile_report())
    page = Page(text)
    assert_inert(page)
    assert "<script>alert" not in text and "<img" not in text
    assert text.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 10


def test_the_csp_admits_exactly_the_inline_script_and_style() -> None:
    text = render_html(report([check("fail"), check("pass", "AMP-DEL-01")]))
    page = Page(text)
    csp = next(
        a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    )
    assert csp is not None
    directives = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    assert directives["default-src"] == "'none'"
    for kind in ("script", "style"):
        (inline,) = ["".join(page.inline[kind])]
        digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
        assert directives[f"{kind}-src"] == f"'sha256-{digest}'"
    assert "url(" not in "".join(page.inline["style"]) and "@import" not in text


def test_grid_lists_the_catalogue_and_colours_by_the_worst_outcome() -> None:
    checks = [check("pass"), check("fail"), check("skip", "AMP-DEL-01"), check("warn", "AMP-DEL-02")]
    data = report(checks)
    page = Page(render_html(data))
    cells = page.with_class("req")
    catalogue = read_catalogue(data)  # the packaged catalogue, as the report carries it
    assert len(catalogue.requirements) >= 100
    assert len(cells) == len(catalogue.requirements)
    by_id = {c["id"]: c for c in cells}
    assert by_id["g-AMP-READ-02"]["data-outcome"] == "fail"
    assert by_id["g-AMP-DEL-01"]["data-outcome"] == "skip"
    assert by_id["g-AMP-DEL-02"]["data-outcome"] == "warn"
    assert by_id["g-AMP-CELL-01"]["data-outcome"] == "uncovered"
    assert by_id["g-AMP-READ-02"]["href"] == "#r-AMP-READ-02"
    assert "AMP-READ-02 (MUST), fail" in (by_id["g-AMP-READ-02"]["aria-label"] or "")
    # The anchor a cell points at exists, in the (open) failing check.
    assert any(attrs.get("id") == "r-AMP-READ-02" for _, attrs in page.tags)
    details = [
        attrs for tag, attrs in page.tags if tag == "details" and "check" in (attrs.get("class") or "")
    ]
    assert {d["data-outcome"]: "open" in d for d in details} == {
        "pass": False,
        "fail": True,
        "skip": False,
        "warn": True,
    }


def test_a_v2_report_uses_its_own_catalogue() -> None:
    data = report([check("fail", "AMP11-MEM-01")], report_version="2.0", protocol="amp-1.1")
    data["catalogue"] = {
        "protocol": "amp-1.1",
        "areas": {"mem": "Memories"},
        "requirements": [
            {"id": "AMP11-MEM-01", "level": "MUST", "title": "t1", "area": "mem"},
            {"id": "AMP11-MEM-02", "level": "SHOULD", "title": "t2", "area": "mem"},
        ],
    }
    data["checks"][0]["blocked_by"] = None
    blocked = check(
        "blocked", "AMP11-MEM-02", blocked_by={"check": data["checks"][0]["id"], "step": "create"}
    )
    data["checks"].append(complete({"checks": [blocked]})["checks"][0])
    text = render_html(data)
    cells = Page(text).with_class("req")
    assert [c["data-outcome"] for c in cells] == ["fail", "blocked"]
    assert "Memories (mem)" in text and "amp-1.1" in text
    assert 'Blocked by <a href="#c-0">' in text


def test_evidence_is_bounded_and_every_cut_is_stated() -> None:
    huge = json.dumps({"text": "x" * 16000})
    checks = [
        check(outcome, f"AMP-READ-{n % 11 + 1:02d}", exchanges=[exchange(huge)] * 30)
        for n, outcome in enumerate(["fail", "pass", "pass", "warn"] * 75)
    ]
    text = render_html(report(checks))
    assert len(text.encode()) <= MAX_PAGE_BYTES
    assert "cut: showing" in text and "more exchange(s) not shown" in text
    assert_inert(Page(text))


def test_json_bodies_are_pretty_printed() -> None:
    text = render_html(report([check("fail", exchanges=[exchange('{"a":{"b":[1,2]}}')])]))
    assert "{\n  &quot;a&quot;: {\n    &quot;b&quot;: [" in text


def test_fuzz_findings_show_seed_and_reproduction() -> None:
    message = (
        "4xx answers without the AMP error envelope: 1 finding(s)\n- AMP-ERR-01 GET /memories: not JSON "
        "(status 400, seed 1234)\n    reproduce: curl -X GET 'http://127.0.0.1:9/amp/v1/memories?limit=x'"
    )
    text = render_html(report([check("fail", "AMP-ERR-01", message=message)]))
    assert "Fuzz findings" in text and "Seed: 1234" in text
    assert "<code>curl -X GET &#x27;http://127.0.0.1:9/amp/v1/memories?limit=x&#x27;</code>" in text


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
CHECK_KEYS = [
    "id",
    "title",
    "requirements",
    "level",
    "area",
    "outcome",
    "message",
    "warnings",
    "notes",
    "curl",
    "exchanges",
    "blocked_by",
    "expectation",
    "finding_requirements",
    "findings",
]
REPORT_KEYS = ["run", "server", "conventions", "summary", "catalogue", "cleanup", "expectations", "tool"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    check_fields=st.dictionaries(st.sampled_from(CHECK_KEYS), JSON_VALUES, max_size=6),
    report_fields=st.dictionaries(st.sampled_from(REPORT_KEYS), JSON_VALUES, max_size=4),
)
def test_odd_reports_are_refused_in_one_line_or_render(
    check_fields: dict[str, Any], report_fields: dict[str, Any]
) -> None:
    """A hand-edited report is read once, by the model: refused with one line saying where, or (when
    the schema takes it) rendered like any other."""
    data = report([check("fail")])
    data["checks"][0].update(check_fields)
    data.update(report_fields)
    try:
        Report.from_json(data)
    except ReportError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(("is not", "has report_version"))
        return
    assert_inert(Page(render_html(data)))


def test_diff_page_puts_regressions_first() -> None:
    old = report([check("pass"), check("fail", "AMP-DEL-01"), check("pass", "AMP-DEL-02")])
    new = copy.deepcopy(old)
    new["checks"][0]["outcome"] = "fail"
    new["checks"][1]["outcome"] = "pass"
    new["checks"].pop()
    diff = minimal_diff(old, new)
    assert [e["id"] for e in diff["regressions"]] == [old["checks"][0]["id"]]
    assert [e["id"] for e in diff["fixes"]] == [old["checks"][1]["id"]]
    assert [e["id"] for e in diff["removed"]] == [old["checks"][2]["id"]]
    assert {e["id"] for e in diff["requirements"]} == {"AMP-READ-02", "AMP-DEL-01", "AMP-DEL-02"}
    text = render_diff_html(old, new)
    assert text.index("Regressions (1)") < text.index("Fixes (1)") < text.index("Removed checks (1)")
    assert_inert_diff = Page(text)
    assert [tag for tag, _ in assert_inert_diff.tags].count("script") == 0
    assert "script-src &#x27;none&#x27;" in text
    # A diff given by the caller (the diff command's) is what the page shows.
    assert "Regressions (0)" in render_diff_html(old, new, {"regressions": []})


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_report_command_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _write(tmp_path / "r.json", report([check("fail")]))
    target = tmp_path / "out" / "r.html"
    assert report_main([str(source), "--html", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == render_html(json.loads(source.read_text()))
    fixed = report([check("fail")])
    fixed["checks"][0]["outcome"] = "pass"
    other = _write(tmp_path / "n.json", fixed)
    assert report_main([str(source), str(other), "--html", str(tmp_path / "d.html")]) == 0
    assert "Fixes (1)" in (tmp_path / "d.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot read"),
        ("{not json", "is not JSON"),
        ("[1, 2]", "is not an amp-conformance JSON report"),
        (b"\xff\xfe\x00", "cannot read"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes | None, reason: str
) -> None:
    source = tmp_path / "r.json"
    if isinstance(content, bytes):
        source.write_bytes(content)
    elif content is not None:
        source.write_text(content, encoding="utf-8")
    assert report_main([str(source), "--html", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and reason in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


def test_an_unwritable_path_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write(tmp_path / "r.json", report([check("pass")]))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert report_main([str(source), "--html", str(blocker / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write" in err


def test_page_has_real_headings_buttons_and_written_outcomes() -> None:
    page = Page(render_html(report([check("fail"), check("pass", "AMP-DEL-01")])))
    tags = [tag for tag, _ in page.tags]
    assert tags.count("h1") == 1 and "h2" in tags and "h3" in tags
    for tag, attrs in page.tags:
        if "copy" in (attrs.get("class") or "").split() or attrs.get("id") in ("reset", "req-clear"):
            assert tag == "button" and attrs.get("type") == "button"
    assert re.search(r"@media print", "".join(page.inline["style"]))


def test_the_command_dispatches_report_and_refuses_three_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write(tmp_path / "r.json", report([check("pass")]))
    assert main(["report", str(source), "--html", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == render_html(json.loads(source.read_text()))
    with pytest.raises(SystemExit) as exited:
        main(["report", str(source), str(source), str(source), "--html", str(tmp_path / "x.html")])
    assert exited.value.code == 2


def test_a_run_whose_html_cannot_be_written_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    target = blocker / "r.html"
    outcome = run_against_reference(areas="health", extra={"amp_html": str(target)})
    assert outcome.exit_code == 2
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if str(blocker) in line]) == 1, err
    assert "Traceback" not in err and not target.exists()


def test_write_html_report_says_why_it_cannot_write(tmp_path: Path) -> None:
    from amp_conformance.reports.html import write_html_report

    blocker = tmp_path / "file"
    blocker.write_text("x")
    problem = write_html_report(report([check("pass")]), blocker / "r.html")
    assert problem is not None and "cannot write the HTML report" in problem and "\n" not in problem
    assert write_html_report(report([check("pass")]), tmp_path / "ok" / "r.html") is None
    assert (tmp_path / "ok" / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
