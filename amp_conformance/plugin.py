"""The pytest plugin (entry point ``pytest11``).

Inert unless ``--amp-base-url`` is given: it then turns the checks under ``amp_conformance/amp01/checks``
(or any test marked with ``@check``) into a conformance run against that server, classifies each
result as pass / fail / warn / skip / error, and writes the reports.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Generator
from typing import Any

import httpx
import pytest

from amp_conformance.amp01.context import Amp
from amp_conformance.engine.catalogue import MUST
from amp_conformance.engine.client import normalise_base_url
from amp_conformance.engine.marking import MARK, check_info
from amp_conformance.engine.options import OPTION_SPECS, UsageError, build_options
from amp_conformance.engine.outcomes import (
    ERROR,
    FAIL,
    PASS,
    SKIP,
    WARN,
    CheckFailure,
    ToolError,
    TransportFailure,
)
from amp_conformance.engine.report import build_report, render_failure, render_summary, write_json_report
from amp_conformance.engine.run import CheckResult, Run
from amp_conformance.reports.html import write_html_report

RUN_KEY = pytest.StashKey[Run]()
AMP_KEY = pytest.StashKey[Amp]()


class HttpOverride:
    """Pass an instance in ``pytest.main(plugins=[...])`` to send the run's requests through ``http``
    (for example `amp_conformance.engine.inprocess.asgi_client(app)` for the reference server in-process)."""

    def __init__(self, http: httpx.Client):
        self.http = http


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("amp-conformance", "AMP conformance suite")
    for spec in OPTION_SPECS:
        group.addoption(f"--amp-{spec.name}", dest=spec.dest, help=spec.help, **spec.kwargs)


def active_run(config: pytest.Config) -> Run | None:
    return config.stash.get(RUN_KEY, None)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARK}(requirements, level, area): an AMP conformance check")
    if not config.getoption("amp_base_url", None):
        return
    values = {spec.dest: config.getoption(spec.dest) for spec in OPTION_SPECS}
    try:
        options = build_options(values)
        normalise_base_url(options.base_url)
    except (UsageError, ValueError) as exc:
        raise pytest.UsageError(f"amp-conformance: {exc}") from None
    if options.junit_path is not None and not getattr(config.option, "xmlpath", None):
        config.option.xmlpath = str(options.junit_path)
    http = next((p.http for p in config.pluginmanager.get_plugins() if isinstance(p, HttpOverride)), None)
    config.stash[RUN_KEY] = Run(options, http=http)


def pytest_sessionstart(session: pytest.Session) -> None:
    run = active_run(session.config)
    if run is None:
        return
    try:
        run.client(None).get("/health")
    except TransportFailure as exc:
        if exc.unreachable:
            reason = exc.exchange.error if exc.exchange else str(exc)
            pytest.exit(f"amp-conformance: cannot reach {run.options.base_url}: {reason}", 2)
    except ToolError:
        pass  # the server is there but misbehaving: the checks will say how


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run = active_run(config)
    selected: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        info = check_info(item)
        if info is None:
            selected.append(item)
            continue
        if run is None:
            item.add_marker(pytest.mark.skip(reason="an AMP check: give --amp-base-url to run it"))
            selected.append(item)
            continue
        options = run.options
        wanted = (
            (options.areas is None or info.area in options.areas)
            and info.level in options.levels
            and (options.fuzz or info.area != "fuzz")
        )
        (selected if wanted else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


@pytest.fixture
def amp(request: pytest.FixtureRequest) -> Amp:
    """The per-check API of the AMP conformance suite (see ``amp_conformance.amp01.context.Amp``)."""
    run = active_run(request.config)
    info = check_info(request.node) if isinstance(request.node, pytest.Item) else None
    if run is None or info is None:
        pytest.skip("the amp fixture needs --amp-base-url and an @check mark")
    context = Amp(run, info)
    request.node.stash[AMP_KEY] = context
    return context


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    run = active_run(item.config)
    info = check_info(item)
    if run is None or info is None:
        return report
    if report.when == "teardown" or (report.when == "setup" and report.passed):
        return report
    context = item.stash.get(AMP_KEY, None)
    result = CheckResult(
        nodeid=item.nodeid,
        name=item.name,
        title=info.title,
        requirements=info.requirements,
        level=info.level,
        area=info.area,
        outcome=PASS,
        duration=report.duration,
    )
    if context is not None:
        result.exchanges = list(context.evidence.exchanges)
        result.warnings = [
            {
                "message": w.message,
                "requirements": list(w.requirements),
                "curl": w.exchange.curl() if w.exchange else None,
            }
            for w in context.evidence.warnings
        ]
        result.notes = list(context.evidence.notes)
    server_errors = [e for e in result.exchanges if e.status is not None and e.status >= 500]
    if server_errors:
        first = server_errors[0]
        result.warnings.append(
            {
                "message": f"AMP-ERR-07: {first.method} {first.url} answered {first.status} (a 5xx; "
                f"{len(server_errors)} in this check)",
                "requirements": ["AMP-ERR-07"],
                "curl": first.curl(),
            }
        )
    excinfo = call.excinfo
    if report.skipped:
        result.outcome = SKIP
        longrepr = report.longrepr
        result.message = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        result.message = result.message.removeprefix("Skipped: ")
    elif excinfo is None:
        result.outcome = WARN if result.warnings else PASS
        if result.warnings:
            result.message = result.warnings[0]["message"]
    elif isinstance(excinfo.value, CheckFailure) or (
        type(excinfo.value) is AssertionError and report.when == "call"
    ):
        failure = excinfo.value
        exchange = failure.exchange if isinstance(failure, CheckFailure) else None
        if exchange is None and context is not None and context.evidence.exchanges:
            exchange = context.evidence.exchanges[-1]
        result.failing_exchange = exchange
        result.message = failure.message if isinstance(failure, CheckFailure) else str(failure)
        expected = failure.expected if isinstance(failure, CheckFailure) else None
        if info.level == MUST:
            result.outcome = FAIL
            report.longrepr = render_failure(result, expected=expected)
        else:
            result.outcome = WARN
            report.outcome = "passed"
            report.longrepr = None
            result.warnings.insert(
                0,
                {
                    "message": result.message,
                    "requirements": list(info.requirements),
                    "curl": exchange.curl() if exchange else None,
                },
            )
    else:
        result.outcome = ERROR
        error = excinfo.value
        kind = "" if isinstance(error, ToolError) else f"{type(error).__name__} in the check: "
        result.message = f"{kind}{error}"
        if context is not None and context.evidence.exchanges:
            result.failing_exchange = context.evidence.exchanges[-1]
        report.longrepr = render_failure(result)
    report.user_properties.append(("amp_requirements", ",".join(info.requirements)))
    report.user_properties.append(("amp_level", info.level))
    report.user_properties.append(("amp_outcome", result.outcome))
    run.results[item.nodeid] = result
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    if active_run(config) is None or report.when != "call":
        return None
    outcome = dict(report.user_properties).get("amp_outcome")
    if outcome == WARN:
        return "warned", "W", "WARN"
    if outcome == ERROR:
        return "error", "E", "ERROR"
    return None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = active_run(session.config)
    if run is None:
        return
    run.clean_up()
    run.finished_monotonic = time.monotonic()
    if run.options.json_path is not None:
        write_json_report(run, run.options.json_path)
    if run.options.html_path is not None:
        problem = write_html_report(build_report(run), run.options.html_path)
        if problem:  # one line and exit 2, like a usage error
            print(f"amp-conformance: {problem}", file=sys.stderr)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    run = active_run(config)
    if run is None:
        return
    terminalreporter.write_line(render_summary(run))


def pytest_unconfigure(config: pytest.Config) -> None:
    run = active_run(config)
    if run is not None:
        run.close()
