"""``matrix --reports``: runs made separately, joined, give the live matrix of the same implementations.

Three ordinary runs (the reference server, a faulty variant, the AMP v1.1 self-test), each with its own
``--json``, joined with ``matrix --reports``, against ``matrix`` over an implementations file naming the
same three, with the same options (``--only read,init --no-fuzz``; one area per protocol, for time).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.matrix.conftest import ROOT, run_matrix_command
from tests.reports.test_html_browser import CHROMIUM, Visit, _unavailable

SCHEMA = json.loads((ROOT / "amp_conformance/contract/matrix.schema.json").read_text(encoding="utf-8"))
#: The same three as separate runs: name -> (its environment, its arguments).
RUNS: dict[str, tuple[dict[str, str], list[str]]] = {
    "reference": (
        {},
        ["--server-cmd", f"{sys.executable} -m reference_server --port {{port}}", "--only", "read"],
    ),
    "no-access-count": (
        {"AMP_REFERENCE_FAULTS": "get-no-access-count"},
        ["--server-cmd", f"{sys.executable} -m reference_server --port {{port}}", "--only", "read"],
    ),
    "amp11": (
        {},
        [
            "--protocol",
            "amp-1.1",
            "--mcp-command",
            f"{sys.executable} -m reference_server.amp11 --mcp",
            "--only",
            "init",
        ],
    ),
}
IMPLEMENTATIONS = """
[[implementation]]
name = "reference"
protocol = "amp-0.1"
server-cmd = "{python} -m reference_server --port {port}"

[[implementation]]
name = "no-access-count"
protocol = "amp-0.1"
server-cmd = "{python} -m reference_server --port {port}"
environment = { AMP_REFERENCE_FAULTS = "get-no-access-count" }

[[implementation]]
name = "amp11"
protocol = "amp-1.1"
mcp-command = "{python} -m reference_server.amp11 --mcp"
"""
#: What differs between a live matrix and one joined from the same runs' reports, and only that:
#: when the matrix and each run took place and how long they took, where each report lies (``report``)
#: and what the column named as its target and command (the live one's server command, the saved
#: one's file), and each run's id.
MATRIX_ASIDE = ("started_at", "finished_at", "duration_seconds")
COLUMN_ASIDE = ("duration_seconds", "report", "target", "command", "run_id")
BAD_OUTPUTS = ("--json", "bad.json", "--html", "bad.html")


@dataclass
class Joined:
    directory: Path
    live: dict[str, Any]
    live_exit: int
    joined: dict[str, Any]
    joined_exit: int
    joined_stdout: str


def _comparable(matrix: dict[str, Any]) -> dict[str, Any]:
    """``matrix`` without what may differ between two makings of it (:data:`MATRIX_ASIDE`,
    :data:`COLUMN_ASIDE`): a copy."""
    document: dict[str, Any] = json.loads(json.dumps(matrix))
    for key in MATRIX_ASIDE:
        document.pop(key)
    for column in document["implementations"]:
        for key in COLUMN_ASIDE:
            column.pop(key)
    return document


@pytest.fixture(scope="module")
def joined(tmp_path_factory: pytest.TempPathFactory) -> Joined:
    directory = tmp_path_factory.mktemp("joined")
    (directory / "implementations.toml").write_text(IMPLEMENTATIONS, encoding="utf-8")
    live = run_matrix_command(
        ["implementations.toml", "--only", "read,init", "--no-fuzz", "--jobs", "1", "--json", "live.json"],
        directory,
    )
    assert (directory / "live.json").is_file(), live.stdout + live.stderr
    (directory / "saved").mkdir()
    for name, (environment, args) in RUNS.items():
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "amp_conformance",
                *args,
                "--no-fuzz",
                "--json",
                f"saved/{name}.json",
                "-q",
            ],
            cwd=directory,
            env={**os.environ, **environment},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert run.returncode in (0, 1), run.stdout[-2000:] + run.stderr
    paths = [f"saved/{name}.json" for name in RUNS]
    join = run_matrix_command(
        ["--reports", *paths, "--json", "joined.json", "--html", "joined.html", "--site", "site"], directory
    )
    assert (directory / "joined.json").is_file(), join.stdout + join.stderr
    return Joined(
        directory,
        json.loads((directory / "live.json").read_text(encoding="utf-8")),
        live.returncode,
        json.loads((directory / "joined.json").read_text(encoding="utf-8")),
        join.returncode,
        join.stdout,
    )


def test_runs_joined_give_the_live_matrix_of_the_same_implementations(joined: Joined) -> None:
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(joined.joined)
    assert [i["name"] for i in joined.joined["implementations"]] == list(RUNS)
    assert joined.joined["implementations"][1]["verdict"] == "fail"  # the fault shows: not a trivial equality
    assert set(joined.joined["protocols"]) == {"amp-0.1", "amp-1.1"}  # each protocol its own grid
    assert _comparable(joined.joined) == _comparable(joined.live)
    assert joined.joined_exit == joined.live_exit == 1


def test_the_joined_site_holds_each_run_and_its_badge(joined: Joined) -> None:
    site = joined.directory / "site"
    for name in RUNS:
        assert (site / f"{name}.html").is_file() and (site / "badges" / f"{name}.json").is_file()
        kept = json.loads((site / "reports" / f"{name}.json").read_text(encoding="utf-8"))
        saved = json.loads((joined.directory / "saved" / f"{name}.json").read_text(encoding="utf-8"))
        assert kept == saved
    assert json.loads((site / "matrix.json").read_text(encoding="utf-8"))["implementations"][0]["report"] == (
        "reports/reference.json"
    )


def test_matrix_diff_compares_a_joined_matrix_with_a_live_one(joined: Joined) -> None:
    for old, new in (("live.json", "joined.json"), ("joined.json", "live.json")):
        done = run_matrix_command(["diff", old, new, "--format", "json"], joined.directory)
        assert done.returncode == 0, done.stdout + done.stderr
        diff = json.loads(done.stdout)
        assert not diff["regressed"]


def _saved_variant(joined: Joined, name: str, change: dict[str, Any]) -> Path:
    document = json.loads((joined.directory / "saved" / "reference.json").read_text(encoding="utf-8"))
    for key, value in change.items():
        if key == "verdict":
            document["summary"]["verdict"] = value
        else:
            document[key] = value
    path = joined.directory / "variants" / f"{name}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@dataclass
class Unusable:
    done: subprocess.CompletedProcess[str]
    matrix: dict[str, Any]
    html: Path
    incomplete: Path


@pytest.fixture(scope="module")
def unusable(joined: Joined) -> Unusable:
    """A matrix of a good report, an INCOMPLETE one, one of a future schema version and a CI error page."""
    incomplete = _saved_variant(joined, "incomplete", {"verdict": "incomplete"})
    future = _saved_variant(joined, "future", {"report_version": "3.0"})
    not_json = joined.directory / "variants" / "not-json.json"
    not_json.write_text("<html>a CI error page</html>", encoding="utf-8")
    done = run_matrix_command(
        ["--reports", "saved/reference.json", str(incomplete), str(future), str(not_json), *BAD_OUTPUTS],
        joined.directory,
    )
    assert (joined.directory / "bad.json").is_file(), done.stdout + done.stderr
    matrix = json.loads((joined.directory / "bad.json").read_text(encoding="utf-8"))
    return Unusable(done, matrix, joined.directory / "bad.html", incomplete)


def test_an_unusable_or_incomplete_report_is_a_column_that_says_so(
    joined: Joined, unusable: Unusable
) -> None:
    done, matrix = unusable.done, unusable.matrix
    assert done.returncode == 2, done.stdout + done.stderr  # incomplete columns: never 0
    jsonschema.Draft202012Validator(SCHEMA).validate(matrix)
    columns = {i["name"]: i for i in matrix["implementations"]}
    assert columns["reference"]["verdict"] == "pass"
    assert columns["incomplete"]["verdict"] == "incomplete" and columns["incomplete"]["started"]
    assert (
        columns["future"]["verdict"] == "not-started"
        and "report_version '3.0'" in columns["future"]["problem"]
    )
    assert columns["future"]["protocol"] == "amp-0.1"  # the grid its document names
    assert columns["future"]["log_tail"] is None  # a saved run left no log here
    assert "is not JSON" in columns["not-json"]["problem"] and not columns["not-json"]["started"]
    assert "future: unusable report" in done.stdout and "incomplete: INCOMPLETE" in done.stdout
    # beside a failing column the matrix exits 1, never 0
    failing = run_matrix_command(
        ["--reports", "saved/no-access-count.json", str(unusable.incomplete)], joined.directory
    )
    assert failing.returncode == 1, failing.stdout + failing.stderr
    passing = run_matrix_command(["--reports", "saved/reference.json"], joined.directory)
    assert passing.returncode == 0, passing.stdout + passing.stderr


def test_a_folder_of_reports_and_report_entries_beside_live_targets(joined: Joined) -> None:
    ci = joined.directory / "ci"  # as a CI job downloads artifacts: a folder per job, and some other JSON
    for name in RUNS:
        (ci / f"amp-report-{name}").mkdir(parents=True)
        shutil.copy(joined.directory / "saved" / f"{name}.json", ci / f"amp-report-{name}")
    shutil.copy(joined.directory / "joined.json", ci / "matrix.json")
    folder = run_matrix_command(
        ["--reports", "ci", "--json", "folder.json", "--title", "CI <ecosystem>"], joined.directory
    )
    matrix = json.loads((joined.directory / "folder.json").read_text(encoding="utf-8"))
    assert sorted(i["name"] for i in matrix["implementations"]) == sorted(RUNS), folder.stdout
    assert folder.returncode == 1 and "left out ci/matrix.json" in folder.stderr
    assert matrix["title"] == "CI <ecosystem>"
    (joined.directory / "mixed.toml").write_text(
        'title = "mixed"\n[[implementation]]\nname = "theirs"\nreport = "saved/amp11.json"\n'
        'description = "made in their CI"\n'
        '[[implementation]]\nname = "wrong protocol"\nprotocol = "amp-0.1"\nreport = "saved/amp11.json"\n'
        '[[implementation]]\nname = "never starts"\nprotocol = "amp-0.1"\n'
        "server-cmd = \"{python} -c 'raise SystemExit(3)' {port}\"\nstartup-timeout = 5\n",
        encoding="utf-8",
    )
    done = run_matrix_command(
        ["mixed.toml", "--reports", "saved/reference.json", "--json", "mixed.json"], joined.directory
    )
    assert done.returncode == 2, done.stdout + done.stderr
    mixed = json.loads((joined.directory / "mixed.json").read_text(encoding="utf-8"))
    columns = [(i["name"], i["protocol"], i["verdict"]) for i in mixed["implementations"]]
    assert columns == [
        ("theirs", "amp-1.1", "pass"),
        ("wrong protocol", "amp-0.1", "not-started"),
        ("never starts", "amp-0.1", "not-started"),
        ("reference", "amp-0.1", "pass"),
    ]
    assert "is a report of protocol amp-1.1, not amp-0.1" in mixed["implementations"][1]["problem"]
    assert mixed["title"] == "mixed" and mixed["implementations"][0]["description"] == "made in their CI"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--reports", "nowhere.json"], "no such file or folder"),
        ([], "give an IMPLEMENTATIONS.toml, --reports"),
        (
            ["--reports", "saved/reference.json", "--only", "read"],
            "--only applies to the runs a matrix starts",
        ),
    ],
)
def test_a_bad_reports_option_is_one_line(joined: Joined, args: list[str], needle: str) -> None:
    done = run_matrix_command(args, joined.directory)
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr


def test_a_report_entry_takes_no_target(tmp_path: Path) -> None:
    (tmp_path / "i.toml").write_text(
        '[[implementation]]\nname = "a"\nreport = "a.json"\nbase-url = "http://x"\n', encoding="utf-8"
    )
    done = run_matrix_command(["i.toml"], tmp_path)
    assert done.returncode == 2 and "base-url does not go with report" in done.stderr


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
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


def _visit(browser: Any, path: Path) -> Visit:
    context = browser.new_context()
    page = context.new_page()
    seen = Visit(page)
    page.on("pageerror", lambda error: seen.errors.append(str(error)))

    def route(request_route: Any) -> None:
        if request_route.request.url.startswith("file:"):
            request_route.continue_()
        else:
            seen.outside.append(request_route.request.url)
            request_route.abort()

    context.route("**/*", route)
    page.goto(path.as_uri())
    return seen


def test_the_joined_page_renders_in_a_browser(browser: Any, joined: Joined, unusable: Unusable) -> None:
    for path in (joined.directory / "joined.html", joined.directory / "site" / "index.html"):
        seen = _visit(browser, path)
        page = seen.page
        for protocol, block in joined.joined["protocols"].items():
            table = page.locator(f'table.matrix[data-protocol="{protocol}"]')
            assert table.locator("tr[data-item=row]").count() == len(block["requirements"]) > 10
            columns = [i for i in joined.joined["implementations"] if i["protocol"] == protocol]
            assert table.locator("thead th.col").count() == len(columns)
        faulty = page.locator("#col-1")
        assert "no-access-count" in faulty.inner_text() and "FAIL" in faulty.inner_text()
        page.locator('td.cell[data-col="1"][data-outcome="fail"] a').first.click()
        shown = page.eval_on_selector_all(
            "details.check:not([hidden])", "els => els.map(e => e.dataset.impl)"
        )
        assert shown and set(shown) == {"1"}
        assert not seen.errors and not seen.outside
        page.context.close()
    seen = _visit(browser, unusable.html)
    heads = seen.page.locator("thead th.col").all_inner_texts()
    assert any("unusable report" in h and "future" in h for h in heads), heads
    assert any("INCOMPLETE" in h and "incomplete" in h for h in heads), heads
    seen.page.context.close()


def test_the_gitlab_recipes_pages_job_joins_its_reports_folder(joined: Joined) -> None:
    """The ``pages`` job's line as written, on the folder its jobs leave (``reports/NAME.json``)."""
    yaml = pytest.importorskip("yaml")
    recipe = yaml.safe_load((ROOT / "examples/ci/gitlab-matrix.gitlab-ci.yml").read_text(encoding="utf-8"))
    line = next(line for line in recipe["pages"]["script"] if "matrix --reports" in line)
    job = joined.directory / "gitlab"
    shutil.copytree(joined.directory / "saved", job / "reports")
    bin_dir = Path(sys.executable).parent  # amp-conformance as the job's pip install puts it on PATH
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-e", "-c", line], cwd=job, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr  # exit 1 (a MUST failure) is let through
    assert "no-access-count: FAIL" in done.stdout
    assert (job / "public" / "index.html").is_file() and (job / "public" / "amp11.html").is_file()
