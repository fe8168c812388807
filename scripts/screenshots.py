"""Regenerate docs/report-pass.png and docs/report-fail.png: the HTML report of the self-test and of
a run against the reference server with faults, as the system chromium renders them.

    .venv/bin/python scripts/screenshots.py [--chromium /usr/bin/chromium] [--keep DIR]

Needs Debian's chromium and the dev extra (playwright); no browser is downloaded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
#: Faults of the failing run: a few visible failures in different areas.
FAULTS = "get-no-access-count,delete-returns-200-body,limit-clamped"
VIEWPORT = {"width": 1200, "height": 1150}


def run_suite(json_path: Path, html_path: Path, faults: str | None) -> None:
    """The self-test (bundled reference server), optionally with faults, writing both reports."""
    env = {**os.environ, "AMP_LIFECYCLE_ENABLED": "false"}
    env.pop("AMP_REFERENCE_FAULTS", None)
    if faults:
        env["AMP_REFERENCE_FAULTS"] = faults
    command = [sys.executable, "-m", "amp_conformance", "--no-fuzz", "--json", str(json_path)]
    command += ["--html", str(html_path)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode not in (0, 1) or not html_path.is_file():
        sys.exit(f"screenshots: the run failed (exit {result.returncode}):\n{result.stderr[-2000:]}")


def shoot(chromium: str, pages: list[tuple[Path, Path]]) -> None:
    """The top of a passing page; for a failing one, the view after selecting its first failing
    requirement in the grid (its check, evidence and curl line)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, headless=True)
        context = browser.new_context(viewport=VIEWPORT)
        context.route(
            "**/*",
            lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort(),
        )
        for html_path, png_path in pages:
            page = context.new_page()
            page.goto(html_path.as_uri())
            failing = page.locator(".grid .req.o-fail")
            if failing.count():
                failing.first.click()
                page.evaluate("document.querySelector('details.check:not([hidden])').scrollIntoView()")
            page.screenshot(path=str(png_path))
            page.close()
            print(f"{png_path.relative_to(REPO)}: {png_path.stat().st_size // 1024} KiB")
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--chromium", default=shutil.which("chromium"), help="the browser (default: chromium on PATH)"
    )
    parser.add_argument("--keep", type=Path, help="also keep the JSON and HTML reports in this folder")
    args = parser.parse_args()
    if not args.chromium:
        sys.exit("screenshots: chromium not found (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        pages = []
        for name, faults in (("pass", None), ("fail", FAULTS)):
            html_path = folder / f"report-{name}.html"
            run_suite(folder / f"report-{name}.json", html_path, faults)
            pages.append((html_path, DOCS / f"report-{name}.png"))
        shoot(args.chromium, pages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
