"""The HTML report in a real browser: Debian's chromium driven by Playwright (no browser download).

The reports come from real in-process runs against the reference server (with faults, so there is
something to show). Without chromium the tests skip, except under CI=true where they fail: a
missing browser must never hide a broken page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.cli import main
from amp_conformance.reports import render_html
from amp_conformance.reports.html_model import read_catalogue
from tests.suite.inprocess import run_against_reference

CHROMIUM = os.environ.get("AMP_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
#: What the hostile-payloads fault puts in its answers; none of it may run in the page.
PAYLOAD_MARKERS = ("<script>", "onerror=", "javascript:")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI is set: the browser tests must run there; .ci/run installs chromium)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser(reports: dict[str, Report]) -> Iterator[Any]:
    """Module-scoped: Playwright's sync API keeps an event loop running in this thread while it is
    alive, which would break every later in-process run of the suite in the same session."""
    if CHROMIUM is None:
        _unavailable("Debian's chromium is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        launched.close()


@dataclass
class Report:
    data: dict[str, Any]
    page: Path


def _report(directory: Path, name: str, env: dict[str, str], areas: str | None) -> Report:
    """A run writing both reports (--json, --html); the page is checked to be the JSON's page, and
    the same as ``amp-conformance report`` renders from the saved JSON."""
    json_path, page = directory / f"{name}.json", directory / f"{name}.html"
    outcome = run_against_reference(
        env, areas=areas, extra={"amp_json": str(json_path), "amp_html": str(page)}
    )
    assert outcome.run is not None
    data = json.loads(json_path.read_text(encoding="utf-8"))
    text = page.read_text(encoding="utf-8")
    assert text == render_html(data)
    assert main(["report", str(json_path), "--html", str(directory / f"{name}-again.html")]) == 0
    assert (directory / f"{name}-again.html").read_text(encoding="utf-8") == text
    return Report(data, page)


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Report]:
    """The runs behind the pages, made before the browser starts (its event loop would be in the way
    of the in-process server)."""
    directory = tmp_path_factory.mktemp("html")
    return {
        # The whole suite (no fuzzing) against the reference server: the page people get most.
        "selftest": _report(directory, "selftest", {}, None),
        # Two areas with a MUST failure, warnings and passes.
        "failing": _report(directory, "failing", {"AMP_REFERENCE_FAULTS": "get-no-access-count"}, "read,del"),
        # Error answers that carry script, onerror and javascript: payloads.
        "hostile": _report(directory, "hostile", {"AMP_REFERENCE_FAULTS": "hostile-payloads"}, "err,read"),
    }


@pytest.fixture(scope="session")
def failing(reports: dict[str, Report]) -> Report:
    return reports["failing"]


@pytest.fixture(scope="session")
def selftest(reports: dict[str, Report]) -> Report:
    return reports["selftest"]


@pytest.fixture(scope="session")
def hostile(reports: dict[str, Report]) -> Report:
    return reports["hostile"]


@dataclass
class Visit:
    page: Any
    dialogs: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@pytest.fixture
def visit(browser: Any) -> Iterator[Any]:
    """Open a page from a file:// URL with every other request aborted (and recorded)."""
    contexts: list[Any] = []

    def open_page(path: Path, *, fragment: str = "", javascript: bool = True) -> Visit:
        context = browser.new_context(java_script_enabled=javascript)
        contexts.append(context)
        page = context.new_page()
        seen = Visit(page)

        def route(request_route: Any) -> None:
            url = request_route.request.url
            if url.startswith("file:"):
                request_route.continue_()
            else:
                seen.outside.append(url)
                request_route.abort()

        context.route("**/*", route)
        page.on(
            "request",
            lambda request: None if request.url.startswith("file:") else seen.outside.append(request.url),
        )
        page.on("dialog", lambda dialog: (seen.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda error: seen.errors.append(str(error)))
        page.goto(path.as_uri() + fragment)
        return seen

    yield open_page
    for context in contexts:
        context.close()


def _visible_outcomes(page: Any) -> list[str]:
    return list(
        page.eval_on_selector_all("details.check:not([hidden])", "els => els.map(e => e.dataset.outcome)")
    )


def test_grid_has_one_cell_per_requirement_and_the_report_counts(visit: Any, failing: Report) -> None:
    seen = visit(failing.page)
    page = seen.page
    catalogue = read_catalogue(failing.data)
    assert len(catalogue.requirements) >= 100
    assert page.locator(".grid .req").count() == len(catalogue.requirements)
    cell_ids = page.eval_on_selector_all(".grid .req", "els => els.map(e => e.id.slice(2))")
    assert sorted(cell_ids) == sorted(r.id for r in catalogue.requirements)
    stated = failing.data["summary"]["outcomes"]
    assert stated["fail"] >= 1 and stated["pass"] >= 1
    for outcome, number in stated.items():
        assert page.locator(f'details.check[data-outcome="{outcome}"]').count() == number, outcome
        assert page.locator(f'.counts td[data-count="{outcome}"]').inner_text() == str(number)
    assert page.locator("details.check").count() == failing.data["summary"]["total"]
    # The failing requirement's cell says so in words, not colour alone, and names itself on focus.
    failed_ids = {rid for c in failing.data["checks"] if c["outcome"] == "fail" for rid in c["requirements"]}
    cell = page.locator(f'[id="g-{sorted(failed_ids)[0]}"]')
    assert "fail" in cell.inner_text().lower()
    cell.focus()
    assert sorted(failed_ids)[0] in page.locator("#grid-hint").inner_text()
    assert seen.errors == [] and seen.outside == []


def test_the_self_test_page_is_one_small_file_matching_its_report(visit: Any, selftest: Report) -> None:
    text = selftest.page.read_text(encoding="utf-8")
    assert len(text.encode()) < 2_000_000
    assert not re.search(r"\ssrc=", text)
    assert set(re.findall(r'\shref="(.)', text)) <= {"#"}
    seen = visit(selftest.page)
    page = seen.page
    assert selftest.data["summary"]["verdict"] == "pass"
    assert page.locator(".grid .req").count() == len(read_catalogue(selftest.data).requirements)
    for outcome, number in selftest.data["summary"]["outcomes"].items():
        assert page.locator(f'details.check[data-outcome="{outcome}"]').count() == number, outcome
    assert seen.errors == [] and seen.outside == []


def test_an_outcome_filter_hides_those_checks_and_the_fragment_keeps_it(visit: Any, failing: Report) -> None:
    seen = visit(failing.page)
    page = seen.page
    total = failing.data["summary"]["total"]
    passes = failing.data["summary"]["outcomes"]["pass"]
    assert len(_visible_outcomes(page)) == total
    page.get_by_role("checkbox", name="pass", exact=True).uncheck()
    shown = _visible_outcomes(page)
    assert "pass" not in shown and len(shown) == total - passes
    fragment = page.evaluate("location.hash")
    assert "outcome=" in fragment and "pass" not in fragment.split("outcome=")[1].split("&")[0].split("%2C")
    # A link with that fragment reproduces the view.
    again = visit(failing.page, fragment=fragment)
    assert sorted(_visible_outcomes(again.page)) == sorted(shown)
    assert not again.page.get_by_role("checkbox", name="pass", exact=True).is_checked()
    # Text search over ids and titles.
    target = next(c for c in failing.data["checks"] if c["outcome"] == "pass")
    page.get_by_role("button", name="Show everything").click()
    page.get_by_role("searchbox", name="Search").fill(target["name"])
    visible_ids = page.eval_on_selector_all(
        "details.check:not([hidden])", "els => els.map(e => e.dataset.text)"
    )
    assert visible_ids and all(target["name"].lower() in text for text in visible_ids)
    # An area filter leaves only that area's checks and grid cells.
    page.get_by_role("button", name="Show everything").click()
    page.locator("select[name=area]").select_option("del")
    areas = page.eval_on_selector_all("[data-item]:not([hidden])", "els => els.map(e => e.dataset.area)")
    assert areas and set(areas) == {"del"}
    # A link to a check the filters hide shows everything again and goes there.
    page.locator("select[name=area]").select_option("")
    page.get_by_role("checkbox", name="fail", exact=True).uncheck()
    failed = page.locator('details.check[data-outcome="fail"]').first
    assert failed.is_hidden()
    page.locator("#h-attention + ul.attention a").first.click()
    assert failed.is_visible()
    assert page.get_by_role("checkbox", name="fail", exact=True).is_checked()


def test_clicking_a_failing_requirement_shows_its_curl_line(visit: Any, failing: Report) -> None:
    seen = visit(failing.page)
    page = seen.page
    failed = next(c for c in failing.data["checks"] if c["outcome"] == "fail")
    rid = failed["requirements"][0]
    page.locator(f'[id="g-{rid}"]').click()
    visible = page.locator("details.check:not([hidden])")
    assert visible.count() >= 1
    reqs = page.eval_on_selector_all(
        "details.check:not([hidden])", "els => els.map(e => e.dataset.reqs.split(' '))"
    )
    assert all(rid in r for r in reqs)
    check = page.locator(f'details.check[data-outcome="fail"][data-reqs~="{rid}"]').first
    curl = check.locator("pre.curl").first
    assert curl.is_visible()
    assert curl.inner_text().startswith("curl ") and curl.inner_text() == failed["curl"]
    assert curl.evaluate(
        "e => { const r = e.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0 }"
    )
    assert rid in page.locator("#req-filter").inner_text()
    copy = check.locator("button.copy").first
    assert copy.is_visible()
    copy.click()
    page.wait_for_function("b => b.textContent !== 'Copy curl'", arg=copy.element_handle())


def test_the_page_reads_without_javascript(visit: Any, failing: Report) -> None:
    page = visit(failing.page, javascript=False).page
    assert page.locator("details.check").count() == failing.data["summary"]["total"]
    assert (
        page.locator('details.check[data-outcome="fail"][open]').count()
        == failing.data["summary"]["outcomes"]["fail"]
    )
    assert page.locator('details.check[data-outcome="pass"][open]').count() == 0
    assert not page.locator("#filters").is_visible()
    assert page.locator("button.copy:visible").count() == 0
    assert page.locator('details.check[data-outcome="fail"] pre.curl').first.is_visible()


def _assert_nothing_ran(seen: Visit) -> None:
    page = seen.page
    assert seen.dialogs == []
    assert page.evaluate("typeof window.__ampInjected") == "undefined"
    assert page.locator("script").count() == 1
    assert page.locator("img, svg, iframe, object, embed").count() == 0
    assert page.locator("[onerror], [onload], [onclick], a[href^='javascript']").count() == 0
    assert seen.outside == []


def test_hostile_payloads_are_shown_as_text_and_never_run(
    visit: Any, hostile: Report, tmp_path: Path
) -> None:
    raw = json.dumps(hostile.data)
    assert all(marker in raw for marker in PAYLOAD_MARKERS), "the fault did not serve its payloads"
    assert hostile.data["summary"]["outcomes"]["fail"] >= 1
    seen = visit(hostile.page)
    page = seen.page
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    _assert_nothing_ran(seen)
    text = page.locator("body").inner_text()
    assert all(marker in text for marker in PAYLOAD_MARKERS)
    assert seen.errors == []
    # Escaping alone holds: the same page without its Content-Security-Policy runs nothing either.
    source = hostile.page.read_text(encoding="utf-8")
    start = source.index('<meta http-equiv="Content-Security-Policy"')
    bare = tmp_path / "no-csp.html"
    bare.write_text(source[:start] + source[source.index(">", start) + 1 :], encoding="utf-8")
    unprotected = visit(bare)
    unprotected.page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    _assert_nothing_ran(unprotected)


def test_the_page_loads_with_the_network_blocked(visit: Any, failing: Report, hostile: Report) -> None:
    for report in (failing, hostile):
        seen = visit(report.page)
        seen.page.wait_for_load_state("networkidle")
        assert seen.page.locator("h1").inner_text() == "AMP v0.1.0 conformance report"
        assert seen.outside == [], seen.outside
        # The script ran (filters shown) although nothing could be fetched.
        assert seen.page.locator("#filters").is_visible()


def _shown_in_page_order(page: Any) -> list[str]:
    """The visible checks' outcomes top to bottom, as the reader sees them (CSS order, not markup)."""
    return list(
        page.eval_on_selector_all(
            "details.check:not([hidden])",
            "els => els.map(e => [e.getBoundingClientRect().top, e.dataset.outcome])"
            ".sort((a, b) => a[0] - b[0]).map(p => p[1])",
        )
    )


def test_a_selected_requirement_lists_its_failures_before_its_passes(
    visit: Any, failing: Report, tmp_path: Path
) -> None:
    """Issue 38 item 22: the run's order put a passing check first; the selection shows the failure first."""
    import copy

    from amp_conformance.reports.html import write_html_report

    document = copy.deepcopy(failing.data)
    failed = next(c for c in document["checks"] if c["outcome"] == "fail")
    rid = (failed["finding_requirements"] or failed["requirements"])[0]
    passed = next(c for c in document["checks"] if c["outcome"] == "pass" and c["area"] == failed["area"])
    passed["requirements"] = [rid, *passed["requirements"]]  # a passing check of rid's, listed first
    document["checks"] = [passed, *(c for c in document["checks"] if c is not passed)]
    page_path = tmp_path / "moved.html"
    assert write_html_report(document, page_path) is None
    page = visit(page_path).page
    page.locator(f'[id="g-{rid}"]').click()
    order = _shown_in_page_order(page)
    assert "fail" in order and "pass" in order
    assert max(i for i, o in enumerate(order) if o == "fail") < min(
        i for i, o in enumerate(order) if o == "pass"
    )
    focused = page.evaluate("document.activeElement.closest('details.check').dataset.outcome")
    assert focused == "fail"  # the selection scrolls to the first failure
