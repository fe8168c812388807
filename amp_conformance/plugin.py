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
from amp_conformance.engine.catalogue import MUST, level_of
from amp_conformance.engine.client import normalise_base_url
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.expectations import (
    Expectation,
    Expectations,
    ExpectationsError,
    load_expectations,
    render_expectations,
    xfail_marker,
)
from amp_conformance.engine.marking import MARK, CheckInfo, check_info
from amp_conformance.engine.options import OPTION_SPECS, UsageError, build_options
from amp_conformance.engine.outcomes import (
    BLOCKED,
    ERROR,
    FAIL,
    PASS,
    SKIP,
    WARN,
    CheckFailure,
    Evidence,
    PreconditionFailed,
    ToolError,
    TransportFailure,
)
from amp_conformance.engine.parallel import (
    RESULT_ATTRIBUTE,
    Controller,
    is_controller,
    is_worker,
    plain_nodeid,
    result_to_wire,
    worker_input,
    worker_output,
)
from amp_conformance.engine.progress import Progress
from amp_conformance.engine.report import (
    build_report,
    render_failure,
    render_summary,
    resolve_blocked,
    write_json_report,
)
from amp_conformance.engine.run import CheckResult, NotEnoughAgents, Run

RUN_KEY = pytest.StashKey[Run]()
AMP_KEY = pytest.StashKey[Amp]()
EXPECTATIONS_KEY = pytest.StashKey[Expectations]()
EXPECTATION_KEY = pytest.StashKey[Expectation]()
CONTROLLER_KEY = pytest.StashKey[Controller]()
#: ``--dist`` modes a parallel run accepts (``-n`` alone means load): the plugin's own scheduler
#: (``engine.parallel.make_scheduler``) replaces each.
SPREADING_MODES = ("load", "loadgroup", "worksteal")


class HttpOverride:
    """Pass an instance in ``pytest.main(plugins=[...])`` to send the run's requests through ``http``
    (for example `amp_conformance.engine.inprocess.asgi_client(app)` for the reference server in-process)."""

    def __init__(self, http: httpx.Client):
        self.http = http


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("amp-conformance", "AMP conformance suite")
    for spec in OPTION_SPECS:
        group.addoption(f"--amp-{spec.name}", dest=spec.dest, help=spec.help, **spec.kwargs)


def _enabled(config: pytest.Config) -> bool:
    """The plugin acts only when given a target: a base URL, an MCP command, or ``--amp-protocol
    amp-1.1`` alone (the AMP v1.1 self-test)."""
    return bool(
        config.getoption("amp_base_url", None)
        or config.getoption("amp_mcp_command", None)
        or config.getoption("amp_protocol", None) == "amp-1.1"
    )


def active_run(config: pytest.Config) -> Run | None:
    return config.stash.get(RUN_KEY, None)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARK}(requirements, level, area): an AMP conformance check")
    if not _enabled(config):
        return
    values = {spec.dest: config.getoption(spec.dest) for spec in OPTION_SPECS}
    try:
        options = build_options(values)
        if options.base_url:
            normalise_base_url(options.base_url)
    except (UsageError, ValueError) as exc:
        raise pytest.UsageError(f"amp-conformance: {exc}") from None
    if getattr(config.option, "tbstyle", "auto") == "auto":
        # every failing check's report is the suite's own (render_failure); pytest's default traceback,
        # thrown away, would parse the check's module source for each failure (~0.5 s apiece)
        config.option.tbstyle = "native"
    if options.junit_path is not None and not getattr(config.option, "xmlpath", None):
        config.option.xmlpath = str(options.junit_path)
    http = next((p.http for p in config.pluginmanager.get_plugins() if isinstance(p, HttpOverride)), None)
    controller = is_controller(config)
    if controller:
        problem = _parallel_problem(config, options.protocol, http)
        if problem:
            pytest.exit(f"amp-conformance: {problem}", 2)
    if options.expectations_path is not None:
        try:
            config.stash[EXPECTATIONS_KEY] = load_expectations(options.expectations_path)
        except ExpectationsError as exc:
            raise pytest.UsageError(f"amp-conformance: {exc}") from None
    if is_worker(config):
        config.stash[RUN_KEY] = _worker_run(config, options)
        return  # a worker shows nothing: the controller reports the merged run
    run = Run(options, http=http)
    config.stash[RUN_KEY] = run
    if controller:
        run.workers = len(getattr(config.option, "tx", None) or ()) or 1
        config.stash[CONTROLLER_KEY] = Controller(run)
        config.pluginmanager.register(config.stash[CONTROLLER_KEY], "amp-parallel-controller")
    if not any(isinstance(p, Progress) for p in config.pluginmanager.get_plugins()):
        config.pluginmanager.register(Progress(active_run), "amp-progress")


def _parallel_problem(config: pytest.Config, protocol: str, http: httpx.Client | None) -> str | None:
    """Why this run cannot be spread over workers, if it cannot."""
    if protocol != "amp-0.1":
        return f"{protocol} runs use one worker (its MCP channel is a single process): drop -n/--workers"
    if http is not None:
        return (
            "an in-process app cannot be shared by parallel workers: give the server a port "
            "(--server-cmd or --base-url) or drop -n/--workers"
        )
    dist = getattr(config.option, "dist", "no")
    if dist not in SPREADING_MODES:
        return f"--dist {dist} is not supported: leave --dist out (the plugin schedules the checks itself)"
    return None


def _worker_run(config: pytest.Config, options: Any) -> Run:
    """A worker's run: the controller's run id and conventions, its own namespace."""
    briefing = worker_input(config)
    run = Run(options, run_id=briefing.get("amp_run_id"), worker=str(briefing.get("workerid", "gw")))
    run.preflight_problem = briefing.get("amp_preflight_problem")
    spec = briefing.get("amp_spec")
    if isinstance(spec, dict):
        run.adopt_spec_state(spec)
    conventions = briefing.get("amp_conventions")
    if isinstance(conventions, dict):
        from amp_conformance.amp01.conventions import Conventions

        run.conventions = Conventions.from_wire(conventions)
    return run


def pytest_sessionstart(session: pytest.Session) -> None:
    run = active_run(session.config)
    if run is None:
        return
    if run.options.protocol == "amp-1.1":
        from amp_conformance.amp11 import hooks

        options = run.options
        hooks.configure(
            session.config,
            mcp_command=options.mcp_command,
            base_url=options.base_url,
            timeout=options.timeout,
            deadline=options.deadline,
            run_id=str(run.id),
            http=run.connection.http_override,
            keep=options.keep_cells,
        )
        problem = hooks.start(session.config)
    elif is_worker(session.config):
        return  # the controller ran the preflight
    else:
        problem = preflight(run)
    if problem:
        # one line, no pytest banner: no check is run (all are deselected) and the session ends with 2
        run.preflight_problem = problem
        print(f"amp-conformance: {problem}", file=sys.stderr, flush=True)
    controller = session.config.stash.get(CONTROLLER_KEY, None)
    if controller is not None:
        controller.briefing = _briefing(run)


def _briefing(run: Run) -> dict[str, Any]:
    """What every worker of a parallel run starts from: detected once here, seen by all."""
    briefing: dict[str, Any] = {"amp_run_id": str(run.id), "amp_preflight_problem": run.preflight_problem}
    if run.preflight_problem is None and run.options.protocol == "amp-0.1":
        from amp_conformance.amp01.conventions import detect_conventions

        briefing["amp_spec"] = run.spec_state()
        conventions = detect_conventions(run)
        run.conventions = conventions
        briefing["amp_conventions"] = conventions.as_wire()
    return briefing


def preflight(run: Run) -> str | None:
    """One clear reason not to start the checks (nothing answers, or what answers is no AMP server),
    else None: a wrong URL costs one line, not a hundred failures. A server that answers either
    ``GET /health`` or ``GET /spec`` with a JSON object is checked; its flaws are the checks' business."""
    if run.options.protocol != "amp-0.1":
        return None
    client = run.client(None)
    seen: list[str] = []
    for path in ("/health", "/spec"):
        try:
            reply = client.get(path)
        except TransportFailure as exc:
            reason = exc.exchange.error if exc.exchange and exc.exchange.error else str(exc)
            return f"cannot reach {run.options.base_url}: {reason}"
        except ToolError as exc:
            return f"cannot reach {run.options.base_url}: {exc}"
        kind = reply.headers.get("content-type", "no content type").split(";")[0]
        try:
            body = reply.json() if reply.status == 200 else None
        except AssertionError:
            body = None
        if isinstance(body, dict):
            return None
        seen.append(f"GET {reply.exchange.url} answered {reply.status} ({kind})")
    return (
        f"{run.options.base_url} does not look like an AMP server: {'; '.join(seen)}. "
        "Give the server's base URL, with or without /amp/v1."
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run = active_run(config)
    if run is not None and run.preflight_problem:
        config.hook.pytest_deselected(items=list(items))
        items[:] = []
        return
    expectations = config.stash.get(EXPECTATIONS_KEY, None)
    selected: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        info = check_info(item)
        if info is None:
            selected.append(item)
            continue
        expectation = expectations.match(item.nodeid, item.name, info.requirements) if expectations else None
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
        if wanted:
            run.selected_requirements.update(info.requirements)
        if wanted and expectation is not None:
            item.stash[EXPECTATION_KEY] = expectation
            marker = xfail_marker(expectation, strict=options.strict_expectations)
            if marker is not None:
                item.add_marker(marker)
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
    evidence = context.evidence if context is not None else _protocol_evidence(run, item)
    result = CheckResult(
        nodeid=plain_nodeid(item.nodeid),
        name=item.name,
        title=info.title,
        requirements=info.requirements,
        level=info.level,
        area=info.area,
        outcome=PASS,
        duration=report.duration,
    )
    if context is not None:
        result.requests = run.connection.requests - context.requests_at_start
    if evidence is not None:
        result.exchanges = list(evidence.exchanges)
        result.warnings = [
            _warning_entry(w.message, w.requirements, w.exchange, info) for w in evidence.warnings
        ]
        result.notes = list(evidence.notes)
    server_errors = [e for e in result.exchanges if e.status is not None and e.status >= 500]
    if server_errors:
        first = server_errors[0]
        result.warnings.append(
            _warning_entry(
                f"{first.method} {first.url} answered {first.status}, a server error "
                f"({len(server_errors)} in this check)",
                ("AMP-ERR-07",),
                first,
                info,
            )
        )
    _classify(run, info, result, call.excinfo, report, context)
    expectation = item.stash.get(EXPECTATION_KEY, None)
    if expectation is not None:
        result.expectation = expectation.as_report(result.outcome)
    report.user_properties.append(("amp_protocol", run.options.protocol))
    report.user_properties.append(("amp_requirements", ",".join(info.requirements)))
    report.user_properties.append(("amp_level", result.level))
    report.user_properties.append(("amp_outcome", result.outcome))
    run.results[result.nodeid] = result
    if is_worker(item.config):
        setattr(report, RESULT_ATTRIBUTE, result_to_wire(result, run.root_steps.get(result.nodeid)))
    return report


def _protocol_evidence(run: Run, item: pytest.Item) -> Evidence | None:
    """A check's evidence kept by a protocol package other than AMP v0.1.0."""
    if run.options.protocol == "amp-1.1":
        from amp_conformance.amp11 import hooks

        return hooks.evidence_of(item)
    return None


def _warning_entry(
    message: str, requirements: tuple[str, ...], exchange: Exchange | None, info: CheckInfo
) -> dict[str, Any]:
    return {
        "message": message,
        "requirements": list(requirements),
        "level": _finding_level(info, requirements),
        "curl": exchange.curl() if exchange else None,
        "exchange": exchange.as_dict() if exchange else None,
    }


def _finding_level(info: CheckInfo, requirements: tuple[str, ...]) -> str:
    """A finding about the check's own ids has the check's level (the catalogue's, or the documented
    stance it names); a finding about other ids has theirs."""
    if set(requirements) <= set(info.requirements):
        return info.level
    return level_of(requirements, default=info.level)


def _classify(
    run: Run,
    info: CheckInfo,
    result: CheckResult,
    excinfo: pytest.ExceptionInfo[BaseException] | None,
    report: pytest.TestReport,
    context: Amp | None,
) -> None:
    """Turn what happened into one outcome: pass, fail, warn, skip, error or blocked."""
    error = excinfo.value if excinfo is not None else None
    if isinstance(error, CheckFailure) and context is not None:
        error = context.reattribute(error)
    if isinstance(error, NotEnoughAgents):
        result.outcome = SKIP
        result.message = str(error)
        _as_skipped(report, result.message)
        return
    if error is None and report.skipped:
        result.outcome = SKIP
        longrepr = report.longrepr
        result.message = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        result.message = result.message.removeprefix("Skipped: ")
        return
    if error is None or isinstance(error, pytest.skip.Exception):
        if isinstance(error, pytest.skip.Exception):
            result.outcome = SKIP
            result.message = str(error.msg)
            return
        if result.warnings:
            first = result.warnings[0]
            result.outcome = WARN
            result.message = first["message"]
            result.finding_requirements = tuple(first["requirements"])
            result.level = first["level"]
        return
    if isinstance(error, PreconditionFailed) and error.requirement not in info.requirements:
        reporter = run.root_causes.get(error.requirement)
        asked = error.requirement in run.selected_requirements
        if reporter is not None or asked:
            result.outcome = BLOCKED
            result.blocked_by = {"requirement": error.requirement, "step": error.step, "check": reporter}
            result.message = error.message
            result.failing_exchange = error.exchange or _last_exchange(result)
            _as_skipped(report, f"blocked by {error.requirement} ({error.step})")
            return
        # no selected check asks about the broken step: this check reports the root cause, once
        run.root_steps[result.nodeid] = {
            "requirement": error.requirement,
            "step": error.step,
            "level": info.level,
        }
    if isinstance(error, CheckFailure) or (type(error) is AssertionError and report.when == "call"):
        failure = error
        exchange = failure.exchange if isinstance(failure, CheckFailure) else None
        result.failing_exchange = exchange or _last_exchange(result)
        result.message = failure.message if isinstance(failure, CheckFailure) else str(failure)
        result.expected = failure.expected if isinstance(failure, CheckFailure) else None
        named = failure.requirements if isinstance(failure, CheckFailure) else ()
        result.finding_requirements = named or info.requirements
        result.level = _finding_level(info, result.finding_requirements)
        for rid in result.finding_requirements:
            run.root_causes.setdefault(rid, result.nodeid)
        if result.level == MUST:
            result.outcome = FAIL
            report.longrepr = render_failure(result, expected=result.expected)
        else:
            result.outcome = WARN
            report.outcome = "passed"
            report.longrepr = None
            result.warnings.insert(
                0, _warning_entry(result.message, result.finding_requirements, result.failing_exchange, info)
            )
        return
    result.outcome = ERROR
    kind = "" if isinstance(error, ToolError) else f"{type(error).__name__} in the check: "
    result.message = f"{kind}{error}"
    result.failing_exchange = _last_exchange(result)
    report.longrepr = render_failure(result)


def _last_exchange(result: CheckResult) -> Exchange | None:
    return result.exchanges[-1] if result.exchanges else None


def _as_skipped(report: pytest.TestReport, reason: str) -> None:
    """Show an outcome that is no verdict on the server as a skip to pytest (and JUnit)."""
    report.outcome = "skipped"
    location = report.location
    report.longrepr = (str(location[0]), (location[1] or 0) + 1, reason)


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
    run.interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    output = worker_output(session.config)
    if output is not None:  # a worker: clean up its own cells and tell the controller what it counted
        if not run.preflight_problem:
            run.clean_up()
        output["amp"] = {
            "requests": run.connection.requests,
            "cleanup_requests": run.cleanup_requests,
            "cleanup": run.cleanup,
            "broken_reason": run.connection.broken_reason,
        }
        return
    controller = session.config.stash.get(CONTROLLER_KEY, None)
    if controller is not None:
        controller.merge()
        if controller.missing:  # a worker died with checks in hand: no verdict on them
            run.interrupted = True
        expectations = session.config.stash.get(EXPECTATIONS_KEY, None)
        if expectations is not None:  # the workers matched them: mark each used entry here too
            for result in run.results.values():
                expectations.match(result.nodeid, result.name, result.requirements)
    if run.preflight_problem:
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if run.options.protocol == "amp-1.1":
            from amp_conformance.amp11 import hooks

            hooks.finish(session.config)  # stops the MCP process
        return
    run.clean_up()
    if run.options.protocol == "amp-1.1":
        from amp_conformance.amp11 import hooks

        run.protocol_blocks = hooks.finish(session.config)
    resolve_blocked(run)
    run.finished_monotonic = time.monotonic()
    expectations = session.config.stash.get(EXPECTATIONS_KEY, None)
    if expectations is not None:
        run.expectations_report = expectations.report_entry()
    if run.options.json_path is not None:
        write_json_report(run, run.options.json_path)
    if run.options.html_path is not None:
        from amp_conformance.reports.html import write_html_report  # the reports load only when asked for

        problem = write_html_report(build_report(run), run.options.html_path)
        if problem:  # one line and exit 2, like a usage error
            print(f"amp-conformance: {problem}", file=sys.stderr)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
    options = run.options
    from amp_conformance.reports.ci_outputs import ci_outputs_wanted, write_ci_outputs

    if ci_outputs_wanted(options.markdown_path, options.badge_path, options.write_expectations_path):
        outputs = (options.markdown_path, options.badge_path, options.write_expectations_path)
        for problem in write_ci_outputs(build_report(run), *outputs):
            print(f"amp-conformance: {problem}", file=sys.stderr)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    run = active_run(config)
    if run is None or run.preflight_problem or is_worker(config):
        return
    terminalreporter.write_line(render_summary(run))
    if run.expectations_report is not None:
        strict = run.options.strict_expectations
        terminalreporter.write_line(
            render_expectations(run.results.values(), run.expectations_report, strict=strict)
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    run = active_run(config)
    if run is not None:
        run.close()
