"""The matrix page in Debian's chromium (Playwright, no browser download), as the single-run page is
tested (tests/reports/test_html_browser.py): grid shape, cell selection, filters, hostile content,
no JavaScript, no network."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.reports.html_model import read_checks, requirement_outcomes
from tests.matrix.conftest import MatrixRun, report_of
from tests.reports.test_html_browser import CHROMIUM, PAYLOAD_MARKERS, Visit, _unavailable


@pytest.fixture(scope="module")
def browser(matrix_run: MatrixRun) -> Iterator[Any]:
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


@pytest.fixture
def visit(browser: Any) -> Iterator[Any]:
    contexts: list[Any] = []

    def open_page(path: Path, *, fragment: str = "", javascript: bool = True) -> Visit:
        context = browser.new_context(java_script_enabled=javascript)
        contexts.append(context)
        page = context.new_page()
        seen = Visit(page)

        def route(request_route: Any) -> None:
            if request_route.request.url.startswith("file:"):
                request_route.continue_()
            else:
                seen.outside.append(request_route.request.url)
                request_route.abort()

        context.route("**/*", route)
        page.on("dialog", lambda dialog: (seen.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda error: seen.errors.append(str(error)))
        page.goto(path.as_uri() + fragment)
        return seen

    yield open_page
    for context in contexts:
        context.close()


def _column(run: MatrixRun, name: str) -> tuple[int, dict[str, Any]]:
    return next((n, i) for n, i in enumerate(run.matrix["implementations"]) if i["name"] == name)


def test_one_row_per_requirement_and_one_column_per_implementation(visit: Any, matrix_run: MatrixRun) -> None:
    seen = visit(matrix_run.html)
    page = seen.page
    for protocol, block in matrix_run.matrix["protocols"].items():
        table = page.locator(f'table.matrix[data-protocol="{protocol}"]')
        rows = table.locator("tr[data-item=row]")
        assert rows.count() == len(block["requirements"]) > 50
        ids = rows.evaluate_all("rs => rs.map(r => r.dataset.req)")
        assert sorted(ids) == sorted(r["id"] for r in block["requirements"])
        columns = [i for i in matrix_run.matrix["implementations"] if i["protocol"] == protocol]
        assert table.locator("thead th.col").count() == len(columns)
        assert rows.first.locator("td.cell").count() == len(columns)
    assert page.locator("thead th.col").count() == len(matrix_run.matrix["implementations"])
    # the column heads: verdict, MUST score; the failing cell says so in words
    number, faulty = _column(matrix_run, "no access count")
    head = page.locator(f"#col-{number}")
    assert (
        "FAIL" in head.inner_text()
        and f"MUST {faulty['must']['passed']}/{faulty['must']['total']}" in head.inner_text()
    )
    cell = page.locator(f'a[data-cell="{number}"][data-req="AMP-READ-02"]')
    assert cell.inner_text().lower() == "fail"
    dead_number, _ = _column(matrix_run, "never starts")
    assert "DID NOT START" in page.locator(f"#col-{dead_number}").inner_text()
    assert page.locator(f'td.cell[data-col="{dead_number}"]').first.inner_text() == "not run"
    assert page.locator("td.cell.o-uncovered").count() > 0
    assert seen.errors == [] and seen.outside == []


def test_selecting_a_cell_shows_that_implementations_checks(visit: Any, matrix_run: MatrixRun) -> None:
    page = visit(matrix_run.html).page
    page.get_by_role("button", name="Show every row").click()  # it opens on the mixed rows (item 22)
    assert page.locator("details.check:visible").count() == 0
    for name, rid in (("no access count", "AMP-READ-02"), ("reference", "AMP-READ-02"), ("v1.1 core", None)):
        number, _ = _column(matrix_run, name)
        report = report_of(matrix_run, name)
        outcomes = requirement_outcomes(read_checks(report))
        rid = rid or sorted(outcomes)[0]
        page.locator(f'a[data-cell="{number}"][data-req="{rid}"]').click()
        shown = page.eval_on_selector_all(
            "details.check:not([hidden])", "els => els.map(e => [e.dataset.impl, e.dataset.check])"
        )
        expected = [c.id for c in outcomes[rid][1]]
        assert shown and {n for n, _ in shown} == {str(number)}
        assert [c for _, c in shown] == expected
        assert (
            rid in page.locator("#selection").inner_text() and name in page.locator("#selection").inner_text()
        )
        assert f"cell={number}" in page.evaluate("location.hash")
    # the failing check shows its curl line and evidence
    number, _ = _column(matrix_run, "no access count")
    page.locator(f'a[data-cell="{number}"][data-req="AMP-READ-02"]').click()
    failing = page.locator('details.check[data-outcome="fail"]:not([hidden])').first
    assert failing.locator("pre.curl").first.inner_text().startswith("curl ")
    assert failing.locator("details.exchange").count() >= 1
    # the fragment reproduces the selection
    again = visit(matrix_run.html, fragment=page.evaluate("location.hash")).page
    assert again.locator('details.check[data-outcome="fail"]:not([hidden])').count() >= 1


def test_filters_mixed_nobody_and_area(visit: Any, matrix_run: MatrixRun) -> None:
    page = visit(matrix_run.html).page
    rows = matrix_run.matrix["rows"]
    page.get_by_role("button", name="Show every row").click()  # it opens on the mixed rows (item 22)
    page.get_by_label("some pass and some fail").check()
    visible = page.eval_on_selector_all("tr[data-item=row]:not([hidden])", "rs => rs.map(r => r.dataset.req)")
    mixed = sorted(rid for block in rows.values() for rid, p in block.items() if p == "mixed")
    assert "AMP-READ-02" in mixed and sorted(visible) == mixed
    assert "rows=mixed" in page.evaluate("location.hash")
    page.get_by_label("nobody passes (spec problem candidate)").check()
    visible = page.eval_on_selector_all("tr[data-item=row]:not([hidden])", "rs => rs.map(r => r.dataset.req)")
    assert sorted(visible) == sorted(
        rid for block in rows.values() for rid, p in block.items() if p == "nobody"
    )
    page.get_by_role("button", name="Show every row").click()
    page.locator("select[name=area]").select_option("read")
    areas = page.eval_on_selector_all("tr[data-item=row]:not([hidden])", "rs => rs.map(r => r.dataset.area)")
    assert areas and set(areas) == {"read"}
    page.get_by_role("checkbox", name="MUST", exact=True).uncheck()
    levels = page.eval_on_selector_all(
        "tr[data-item=row]:not([hidden])", "rs => rs.map(r => r.dataset.level)"
    )
    assert "MUST" not in levels


def test_readable_without_javascript(visit: Any, matrix_run: MatrixRun) -> None:
    page = visit(matrix_run.html, javascript=False).page
    assert not page.locator("#mfilters").is_visible()
    started = [i for i in matrix_run.matrix["implementations"] if i["started"]]
    assert page.locator("details.check").count() == sum(len(i["checks"]) for i in started)
    number, _ = _column(matrix_run, "no access count")
    page.locator(f'a[data-cell="{number}"][data-req="AMP-READ-02"]').click()
    assert page.evaluate("location.hash") == f"#i{number}-r-AMP-READ-02"
    target = page.locator(f'[id="i{number}-r-AMP-READ-02"]')
    assert target.count() == 1 and target.evaluate("e => e.closest('details').dataset.impl") == str(number)


def test_hostile_content_is_inert(visit: Any, matrix_run: MatrixRun) -> None:
    text = matrix_run.html.read_text(encoding="utf-8")
    assert all(marker in text for marker in ("&lt;script&gt;", "onerror="))
    seen = visit(matrix_run.html)
    page = seen.page
    page.evaluate("document.querySelectorAll('details').forEach(d => { d.hidden = false; d.open = true; })")
    page.evaluate("document.querySelectorAll('[data-impl-group]').forEach(d => d.hidden = false)")
    assert seen.dialogs == [] and seen.outside == [] and seen.errors == []
    assert page.locator("script").count() == 1
    assert page.locator("img, svg, iframe, object, embed, [src]").count() == 0
    hrefs = page.eval_on_selector_all("[href]", "els => els.map(e => e.getAttribute('href'))")
    assert hrefs and all(h.startswith("#") for h in hrefs)
    assert page.locator("[onerror], [onload], [onclick], a[href^='javascript']").count() == 0
    body = page.locator("body").inner_text()
    assert all(marker in body for marker in PAYLOAD_MARKERS)
    assert "hostile <img src=x onerror=alert(1)>" in body and "<i>ecosystem</i>" in body
    csp = page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
    assert "script-src 'sha256-" in csp and "default-src 'none'" in csp


def test_the_site_links_each_column_to_its_page(visit: Any, matrix_run: MatrixRun) -> None:
    seen = visit(matrix_run.site / "index.html")
    page = seen.page
    page.get_by_role("link", name="reference", exact=True).click()
    assert page.url.endswith("/reference.html")
    assert page.locator("h1").inner_text() == "AMP v0.1.0 conformance report"  # its protocol's title
    assert seen.errors == []


def test_the_page_opens_on_the_mixed_rows_and_a_cell_lists_failures_first(
    visit: Any, matrix_run: MatrixRun
) -> None:
    """Issue 38 item 22: the useful first view, and a cell's failures before its passes."""
    page = visit(matrix_run.html).page
    rows = matrix_run.matrix["rows"]
    mixed = sorted(rid for block in rows.values() for rid, p in block.items() if p == "mixed")
    assert mixed
    visible = page.eval_on_selector_all("tr[data-item=row]:not([hidden])", "rs => rs.map(r => r.dataset.req)")
    assert sorted(visible) == mixed
    assert page.get_by_label("some pass and some fail").is_checked()
    page.get_by_role("button", name="Show every row").click()
    assert (
        page.locator("tr[data-item=row]:not([hidden])").count() == page.locator("tr[data-item=row]").count()
    )
    for name in (i["name"] for i in matrix_run.matrix["implementations"] if i["started"]):
        number, _ = _column(matrix_run, name)
        found = requirement_outcomes(read_checks(report_of(matrix_run, name)))
        rid = next(
            (r for r, (_, checks) in found.items() if {"fail", "pass"} <= {c.outcome for c in checks}), None
        )
        if rid is None:
            continue
        page.locator(f'a[data-cell="{number}"][data-req="{rid}"]').click()
        order = page.eval_on_selector_all(
            "details.check:not([hidden])",
            "els => els.map(e => [e.getBoundingClientRect().top, e.dataset.outcome])"
            ".sort((a, b) => a[0] - b[0]).map(p => p[1])",
        )
        assert max(i for i, o in enumerate(order) if o == "fail") < min(
            i for i, o in enumerate(order) if o == "pass"
        )
        return
    pytest.fail("no implementation has a requirement with both a failing and a passing check")
