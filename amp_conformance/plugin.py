"""The pytest plugin (entry point ``pytest11``): turns a protocol's checks into a conformance run.

It acts when given a target for the chosen protocol (``--amp-protocol``, default: the registry's): a base
URL, or whatever the protocol accepts (``--amp-mcp-command``; AMP v1.1 self-tests its bundled server
with no target). The protocol is found in the registry; this module names none. Each check's verdict
is the engine's (``engine.verdict.judge``); the plugin shows it to pytest and writes the reports.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Generator
from typing import Any

import httpx
import pytest

from amp_conformance.engine import forkserver, interrupt, registry
from amp_conformance.engine.configuration import build_options
from amp_conformance.engine.context import (
    CheckContext,
    SharedStepBroken,
    published_states,
    release_held_claims,
)
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.expectations import (
    Expectation,
    Expectations,
    ExpectationsError,
    baseline_checks,
    load_expectations,
    render_expectations,
    requirements_met,
    xfail_marker,
)
from amp_conformance.engine.marking import MARK, spec_of
from amp_conformance.engine.network import NetworkLog
from amp_conformance.engine.options import OPTION_SPECS, OptionSpec, OptionValues, UsageError
from amp_conformance.engine.outcomes import (
    CheckFailure,
    Evidence,
    NotApplicable,
    ToolError,
    TransportFailure,
)
from amp_conformance.engine.parallel import (
    BRIEFING_PATH_KEY,
    DETAIL_PATH_KEY,
    RESULT_ATTRIBUTE,
    Controller,
    await_briefing,
    is_controller,
    is_worker,
    plain_nodeid,
    post_work_units,
    result_to_wire,
    worker_input,
    worker_output,
)
from amp_conformance.engine.parallel.budget import join_budget
from amp_conformance.engine.progress import Progress
from amp_conformance.engine.protocol import AnyProtocol, protocol_option_error
from amp_conformance.engine.report import (
    build_report,
    closing_counts,
    render_failure,
    render_summary,
    resolve_blocked,
    write_json_report,
)
from amp_conformance.engine.run import CheckResult, Run
from amp_conformance.engine.shared_store import SharedStore
from amp_conformance.engine.tiers import MARKS as TIER_MARKS
from amp_conformance.engine.tiers import in_tier
from amp_conformance.engine.verdict import Skipped, judge
from amp_conformance.engine.vocabulary import Outcome
from amp_conformance.fuzz.options import FUZZ_OPTIONS

RUN_KEY = pytest.StashKey[Run]()
CONTEXT_KEY = pytest.StashKey[CheckContext[Any]]()
EXPECTATIONS_KEY = pytest.StashKey[Expectations]()
EXPECTATION_KEY = pytest.StashKey[Expectation]()
CONTROLLER_KEY = pytest.StashKey[Controller]()
#: A check a transport failure ended and that ran once more: its first run's exchanges and why it broke.
FIRST_RUN_KEY = pytest.StashKey[tuple[tuple[Exchange, ...], str]]()
#: How long a worker that has finished waits for the others before it cleans up (engine.shared_store):
#: the controller says a worker that went down is done, so only a run that hangs reaches it.
CLEANUP_BARRIER_TIMEOUT = 3600.0
#: A worker's path to the briefing the controller posts once its preflight is done (read before work).
PENDING_BRIEFING_KEY = pytest.StashKey[str]()
#: A worker's folder of the briefing, where it also puts the work units of its collection.
BRIEFING_FOLDER_KEY = pytest.StashKey[str]()
#: Workflow-command lines (``::error``) printed after pytest's output, each on a line of its own.
ANNOTATIONS_KEY = pytest.StashKey[list[str]]()
#: The run's report, built once at the session's end: the closing line states its counts.
REPORT_KEY = pytest.StashKey[Any]()
#: The closing line's colour by verdict.
_VERDICT_COLOURS = {"pass": "green", "fail": "red"}
#: ``--dist`` modes a parallel run accepts (``-n`` alone means load): the plugin's own scheduler
#: (``engine.parallel.make_scheduler``) replaces each.
SPREADING_MODES = ("load", "loadgroup", "worksteal")


#: The signal (SIGINT, SIGTERM) that interrupted this process's run, set by the command's handler: a
#: check that swallowed the KeyboardInterrupt (a fuzzer's engine may) cannot turn the run into a verdict.
INTERRUPTED_BY: list[int] = []


class HttpOverride:
    """Pass an instance in ``pytest.main(plugins=[...])`` to send the run's requests through ``http``
    (for example `amp_conformance.engine.inprocess.asgi_client(app)` for a server in-process)."""

    def __init__(self, http: httpx.Client, *, app: str | None = None):
        self.http = http
        self.app = app
        """The ``--app`` spec ``http`` reaches in-process (the report then says how to replay)."""


def all_option_specs() -> list[OptionSpec]:
    """Every option, each name once, declared by what reads it: the registered protocols' transports
    (``--base-url``), the engine, the fuzz area, then each protocol's own."""
    loaded: list[AnyProtocol] = []
    for name in registry.names():
        try:
            loaded.append(registry.get(name))
        except Exception as exc:  # a broken third-party protocol must not break every pytest run
            print(f"amp-conformance: protocol {name!r} cannot be loaded: {exc}", file=sys.stderr)
    specs: dict[str, OptionSpec] = {}
    declared = [
        *(spec for protocol in loaded for spec in protocol.transport_options),
        *OPTION_SPECS,
        *FUZZ_OPTIONS,
        *(spec for protocol in loaded for spec in protocol.options),
    ]
    for spec in declared:
        specs.setdefault(spec.name, spec)
    if "{default}" in specs["protocol"].help:  # the default's title, from the registry
        default = next(
            (p.title for p in loaded if p.name == registry.DEFAULT_PROTOCOL), registry.DEFAULT_PROTOCOL
        )
        specs["protocol"] = dataclasses.replace(
            specs["protocol"], help=specs["protocol"].help.format(default=default)
        )
    return list(specs.values())


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("amp-conformance", "AMP conformance suite")
    for spec in all_option_specs():
        group.addoption(f"--amp-{spec.name}", dest=spec.dest, help=spec.help, **spec.kwargs)


def _values(config: pytest.Config) -> dict[str, Any]:
    return {spec.dest: config.getoption(spec.dest, None) for spec in all_option_specs()}


def _protocol(config: pytest.Config) -> AnyProtocol:
    name = config.getoption("amp_protocol", None) or registry.DEFAULT_PROTOCOL
    try:
        return registry.get(str(name))
    except KeyError as exc:
        raise pytest.UsageError(f"amp-conformance: {exc.args[0]}") from None


def _enabled(config: pytest.Config) -> bool:
    """The plugin acts only when given a target of the chosen protocol."""
    return _protocol(config).has_target(OptionValues(_values(config)))


def active_run(config: pytest.Config) -> Run | None:
    return config.stash.get(RUN_KEY, None)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARK}(requirements, level, area): an AMP conformance check")
    for name, description in TIER_MARKS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    if not _enabled(config):
        return
    if not is_worker(config):  # the summary says INCOMPLETE: pytest's interrupt banner would bury it
        interrupt.install(config)
    protocol = _protocol(config)
    values = _values(config)
    others = [p for p in registry.protocols() if p is not protocol]
    try:
        problem = protocol_option_error(protocol, values, others)
        if problem:
            raise UsageError(problem)
        options = build_options(values, protocol)
    except (UsageError, ValueError) as exc:
        raise pytest.UsageError(f"amp-conformance: {exc}") from None
    if options.fuzz and (options.areas is None or "fuzz" in options.areas):
        _fuzzer_state_outside_cwd()
    if getattr(config.option, "tbstyle", "auto") == "auto":
        # every failing check's report is the suite's own (render_failure); pytest's default traceback,
        # thrown away, would parse the check's module source for each failure (~0.5 s apiece)
        config.option.tbstyle = "native"
    plugins = list(config.pluginmanager.get_plugins())
    override = next((p for p in plugins if isinstance(p, HttpOverride)), None)
    http = override.http if override is not None else None
    if override is not None and override.app:
        options = dataclasses.replace(options, app=override.app)
    controller = is_controller(config)
    if controller:
        problem = _parallel_problem(config, protocol, options, http)
        if problem:
            pytest.exit(f"amp-conformance: {problem}", 2)
    if options.expectations_path is not None:
        try:
            config.stash[EXPECTATIONS_KEY] = load_expectations(options.expectations_path)
        except ExpectationsError as exc:
            raise pytest.UsageError(f"amp-conformance: {exc}") from None
    if is_worker(config):
        briefing = worker_input(config)
        run = Run(options, protocol, run_id=briefing.get("amp_run_id"), worker=str(briefing.get("workerid")))
        run.session = protocol.open_session(run, http=http, plugins=plugins)
        join_budget(run.session, briefing)  # the controller's budget of requests in flight
        path = briefing.get(BRIEFING_PATH_KEY)
        if isinstance(path, str):  # posted once the controller's preflight is done: read before work
            config.stash[PENDING_BRIEFING_KEY] = path
            config.stash[BRIEFING_FOLDER_KEY] = os.path.dirname(path)
            if SharedStore.available():  # the workers make each shared step once between them
                workers = int(briefing.get("workercount") or 1)
                run.shared_store = SharedStore(os.path.dirname(path), str(run.worker), workers=workers)
        else:
            _adopt_briefing(run, briefing)
        config.stash[RUN_KEY] = run
        return  # a worker shows nothing: the controller reports the merged run
    run = Run(options, protocol)
    run.session = protocol.open_session(run, http=http, plugins=plugins)
    config.stash[RUN_KEY] = run
    if controller:
        run.workers = len(getattr(config.option, "tx", None) or ()) or 1
        config.stash[CONTROLLER_KEY] = Controller(run)
        config.stash[CONTROLLER_KEY].fork_workers(config)
        config.pluginmanager.register(config.stash[CONTROLLER_KEY], "amp-parallel-controller")
    else:
        forkserver.discard_early()  # the command asked for workers, the run is serial after all
    if not any(isinstance(p, Progress) for p in plugins):
        config.pluginmanager.register(Progress(active_run), "amp-progress")


def fuzzer_state_directory() -> str:
    """Where the fuzzer (schemathesis) keeps its state in a run: a folder of the tool's own, not
    ``./.schemathesis`` in the directory the user started the run in."""
    import os
    import tempfile

    user = getattr(os, "getuid", lambda: 0)()
    return os.path.join(tempfile.gettempdir(), f"amp-conformance-schemathesis-{user}")


def _fuzzer_state_outside_cwd() -> None:
    try:
        from pathlib import Path

        from schemathesis.core import storage
    except ImportError:  # another schemathesis layout: nothing to move
        return
    storage.DEFAULT_ROOT = Path(fuzzer_state_directory())


def _parallel_problem(
    config: pytest.Config, protocol: AnyProtocol, options: Any, http: httpx.Client | None
) -> str | None:
    """Why this run cannot be spread over workers, if it cannot."""
    problem = protocol.parallel_problem(options, in_process=http is not None)
    if problem:
        return problem
    dist = getattr(config.option, "dist", "no")
    if dist not in SPREADING_MODES:
        return f"--dist {dist} is not supported: leave --dist out (the plugin schedules the checks itself)"
    return None


def _adopt_briefing(run: Run, briefing: dict[str, Any]) -> None:
    """A worker's side of the controller's preflight: its problem, or what it detected (posted later,
    when the briefing names where: ``parallel.Briefing.start``)."""
    run.preflight_problem = briefing.get("amp_preflight_problem")
    if run.preflight_problem:
        return
    detail = briefing.get(DETAIL_PATH_KEY)
    if isinstance(detail, str):
        timeout = briefing_timeout(run)

        def fetch() -> dict[str, Any]:
            found = await_briefing(detail, timeout)
            return {} if "amp_preflight_problem" in found else found  # the worker then detects it itself

        run.active_session.adopt_briefing_later(fetch)
        return
    run.active_session.adopt_briefing(briefing.get("amp_protocol") or {})


def _detail(run: Run) -> dict[str, Any]:
    """What the protocol detects once for all the workers (too few API keys: what it cannot, left to
    the workers' checks, which detect it or skip as a serial run's would)."""
    try:
        return run.active_session.briefing()
    except NotApplicable:
        return {}


def _settle(run: Run, *, brief: bool) -> dict[str, Any]:
    """The preflight and, when it passes and ``brief`` (a parallel run's controller), what every
    worker must agree on. What cannot be detected with what the run was given (too few API keys) is
    left to the workers' checks, which detect it or skip as a serial run's would."""
    problem = run.active_session.preflight()
    briefing: dict[str, Any] = {"amp_run_id": str(run.id), "amp_preflight_problem": problem}
    if problem is None and brief:
        briefing["amp_protocol"] = _detail(run)
    return briefing


def _say_preflight_problem(run: Run, problem: str | None) -> None:
    if problem:
        # one line, no pytest banner: no check is run (all are deselected) and the session ends with 2
        run.preflight_problem = problem
        print(f"amp-conformance: {problem}", file=sys.stderr, flush=True)


def pytest_sessionstart(session: pytest.Session) -> None:
    run = active_run(session.config)
    if run is None or is_worker(session.config):
        return  # a worker: the controller ran the preflight
    controller = session.config.stash.get(CONTROLLER_KEY, None)
    if controller is not None and controller.deferred.open():
        # the workers start now (xdist, after this hook) while the preflight runs: they read its
        # outcome from the file before they take work (engine.parallel.Briefing)
        controller.briefing = {"amp_run_id": str(run.id), BRIEFING_PATH_KEY: controller.deferred.path}
        controller.deferred.start(lambda: _settle(run, brief=False), lambda: _detail(run))
        return
    briefing = _settle(run, brief=controller is not None)
    _say_preflight_problem(run, briefing.get("amp_preflight_problem"))
    if controller is not None:
        controller.briefing = briefing


def _settled_briefing(controller: Controller, run: Run) -> None:
    """The controller's wait for its own preflight thread: done by the time the workers are (they
    waited for it), unless the run was interrupted, when it is not waited for."""
    if controller.deferred.folder is None:
        return
    wait = 0.0 if run.interrupted else briefing_timeout(run)
    outcome = controller.deferred.outcome(wait)
    controller.deferred.close()
    if outcome is None:
        if not run.interrupted:
            _say_preflight_problem(run, f"the preflight did not finish within {wait:.0f} s")
        return
    _say_preflight_problem(run, outcome.get("amp_preflight_problem"))


def briefing_timeout(run: Run) -> float:
    """How long a worker waits for the briefing, and the controller for its preflight: the preflight
    is a handful of requests, each bounded by ``--timeout``."""
    return run.options.timeout * 10 + 30


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    # before xdist sends the collection: the scheduler reads the units from it (parallel.post_work_units)
    run = active_run(session.config)
    folder = session.config.stash.get(BRIEFING_FOLDER_KEY, None)
    if run is not None and folder is not None and run.worker:
        post_work_units(folder, run.worker, [item.nodeid for item in session.items], run.protocol)


def _no_target(config: pytest.Config) -> str:
    """The one line of a collection of checks without a target: skipping them all would exit 0, a
    green CI job that checked nothing."""
    protocol = _protocol(config)
    flags = " or ".join(f"--amp-{spec.name}" for spec in protocol.transport_options) or "a target"
    return f"amp-conformance: the checks of {protocol.name} need a target to run against: give {flags}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run = active_run(config)
    path = config.stash.get(PENDING_BRIEFING_KEY, None)
    if run is not None and path is not None:
        del config.stash[PENDING_BRIEFING_KEY]
        _adopt_briefing(run, await_briefing(path, briefing_timeout(run)))
    if run is not None and run.preflight_problem:
        config.hook.pytest_deselected(items=list(items))
        items[:] = []
        return
    if run is None and not config.option.collectonly and any(spec_of(i) is not None for i in items):
        raise pytest.UsageError(_no_target(config))
    expectations = config.stash.get(EXPECTATIONS_KEY, None)
    selected: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    fuzz_skipped: list[pytest.Item] = []
    for item in items:
        spec = spec_of(item)
        if spec is None:
            selected.append(item)
            continue
        expectation = expectations.match(item.nodeid, item.name, spec.requirements) if expectations else None
        if run is None:
            item.add_marker(pytest.mark.skip(reason="an AMP check: give --amp-base-url to run it"))
            selected.append(item)
            continue
        options = run.options
        wanted = (
            (options.areas is None or spec.area in options.areas)
            and spec.level in options.levels
            and in_tier(options.tier, (mark.name for mark in item.iter_markers()))
            and (options.requirements is None or bool(options.requirements & set(spec.requirements)))
            and (options.check_names is None or _named(item, options.check_names))
        )
        (selected if wanted else deselected).append(item)
        if wanted and not options.fuzz and spec.area == "fuzz":
            # shown as skipped with the reason, not silently left out
            item.add_marker(pytest.mark.skip(reason="the fuzz area is not run (--no-fuzz)"))
            fuzz_skipped.append(item)
            continue
        if wanted:
            run.selected_requirements.update(spec.requirements)
        if wanted and expectation is not None:
            item.stash[EXPECTATION_KEY] = expectation
            # a requirement entry's pass is judged over all its checks (requirements_met), not each
            strict = options.strict_expectations and expectation.check is not None
            marker = xfail_marker(expectation, strict=strict)
            if marker is not None:
                item.add_marker(marker)
    if fuzz_skipped and len(fuzz_skipped) == sum(1 for i in selected if spec_of(i) is not None):
        # nothing but skipped fuzz checks: an empty selection, which is no verdict (exit 2)
        selected = [i for i in selected if i not in fuzz_skipped]
        deselected += fuzz_skipped
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def _named(item: pytest.Item, names: frozenset[str]) -> bool:
    """``--check``/``--rerun-failed``: the item's name, its function's name or its node id."""
    nodeid = plain_nodeid(item.nodeid)
    base = item.name.split("[", 1)[0]
    return bool({item.name, base, nodeid, nodeid.split("[", 1)[0]} & names) or any(
        nodeid.endswith("/" + n) or nodeid.endswith(n) for n in names if "::" in n
    )


@pytest.fixture
def amp(request: pytest.FixtureRequest) -> CheckContext[Any]:
    """The per-check API of the run's protocol (its ``CheckContext`` subclass)."""
    run = active_run(request.config)
    spec = spec_of(request.node) if isinstance(request.node, pytest.Item) else None
    if run is None or spec is None:
        pytest.skip("the amp fixture needs a target (--amp-base-url) and an @check mark")
    context: CheckContext[Any] = run.protocol.context(run.active_session, spec)
    request.node.stash[CONTEXT_KEY] = context
    return context


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A check that a transport failure ended (``TransportFailure``, ``AmbiguousExchange`` among them)
    runs once more from the start on a fresh context (:func:`_run_again`); a failure, a warning, a skip,
    the breaker's ``ServerUnavailable`` or an interrupt never does. pytest-rerunfailures is not used:
    it re-runs set-up and teardown and reports every attempt, each of which this plugin would judge,
    while here only the second run is judged and the first one's exchanges stay in its evidence."""
    run = active_run(item.config)
    try:
        try:
            return (yield)
        except TransportFailure as failure:
            if run is None or not _may_run_again(item, run):
                raise
            reason = _one_line(str(failure))
        _run_again(item, run, reason)
        return None
    finally:
        if run is not None:
            release_held_claims(run)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _may_run_again(item: pytest.Item, run: Run) -> bool:
    """Whether the check may run again: once, with time left in its deadline, the run not interrupted
    and the server not given up on (the breaker: a re-run would not even be sent)."""
    context = item.stash.get(CONTEXT_KEY, None)
    if context is None or FIRST_RUN_KEY in item.stash or "amp" not in getattr(item, "funcargs", {}):
        return False
    if INTERRUPTED_BY or run.interrupted or run.active_session.broken_reason:
        return False
    return time.monotonic() < context.deadline


def _run_again(item: pytest.Item, run: Run, reason: str) -> None:
    """The check once more from the start, on a fresh context (fresh owners and cells, its shared steps
    made again for it alone: the first run's cells stay the cleanup's), within the same deadline; only
    this run is judged (the first one's exchanges are kept for the report: ``FIRST_RUN_KEY``)."""
    first = item.stash[CONTEXT_KEY]
    fresh: CheckContext[Any] = run.protocol.context(run.active_session, first.check_spec)
    fresh.deadline = first.deadline
    fresh.fresh_steps = True  # the first run may have changed the shared steps' cells (a DELETE)
    fresh.requests_at_start = first.requests_at_start
    item.stash[FIRST_RUN_KEY] = (tuple(first.evidence.exchanges), reason)
    item.stash[CONTEXT_KEY] = fresh
    item.funcargs["amp"] = fresh  # type: ignore[attr-defined]
    network = network_of(run.active_session)
    if network is not None:
        network.count_rerun(plain_nodeid(item.nodeid))
    item.runtest()


def network_of(session: object) -> NetworkLog | None:
    """The session's network log (its connection's ``network``), None for a protocol without one."""
    found = getattr(session, "network", None)
    if found is None:
        found = getattr(getattr(session, "http_connection", None), "network", None)
    return found if isinstance(found, NetworkLog) else None


def _unrecovered(raised: BaseException | Skipped | None, *, ran_again: bool) -> bool:
    """Whether the check's ending leaves a broken exchange of its own unrecovered: a transport failure
    (or the shared step it made broken twice), or a re-run that reached no verdict either. A check
    errored under another's broken step is not counted again."""
    if isinstance(raised, SharedStepBroken):
        return raised.reporter or ran_again
    return isinstance(raised, TransportFailure) or (ran_again and isinstance(raised, ToolError))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    run = active_run(item.config)
    spec = spec_of(item)
    if run is None or spec is None:
        return report
    if report.when == "teardown" or (report.when == "setup" and report.passed):
        return report
    context = item.stash.get(CONTEXT_KEY, None)
    evidence: Evidence | None = context.evidence if context is not None else None
    raised = _raised(call.excinfo, report, context)
    verdict = judge(
        spec,
        evidence,
        raised,
        run.facts(),
        nodeid=plain_nodeid(item.nodeid),
        name=item.name,
        duration=report.duration,
        requests=run.active_session.requests - context.requests_at_start if context is not None else None,
        in_call=report.when == "call",
    )
    first_run = item.stash.get(FIRST_RUN_KEY, None) if report.when == "call" else None
    if first_run is not None:  # judged on the re-run alone; the attempt that broke stays as evidence
        exchanges, reason = first_run
        again = verdict.result
        notes = (f"re-run once: {reason}", *again.notes)
        again = dataclasses.replace(again, exchanges=(*exchanges, *again.exchanges), notes=notes)
        verdict = dataclasses.replace(verdict, result=again)
    network = network_of(run.active_session)
    if (
        report.when == "call"
        and network is not None
        and _unrecovered(raised, ran_again=first_run is not None)
    ):
        network.count_unrecovered()
    expectation = item.stash.get(EXPECTATION_KEY, None)
    if expectation is not None:
        met = expectation.judge(verdict.result.outcome, verdict.result.finding_requirements)
        verdict = dataclasses.replace(verdict, result=dataclasses.replace(verdict.result, expectation=met))
    result = run.record(verdict)
    _translate(report, result, raised)
    report.user_properties.append(("amp_protocol", run.options.protocol))
    report.user_properties.append(("amp_requirements", ",".join(spec.requirements)))
    report.user_properties.append(("amp_level", str(result.level)))
    report.user_properties.append(("amp_outcome", str(result.outcome)))
    if is_worker(item.config):
        setattr(report, RESULT_ATTRIBUTE, result_to_wire(result, run.root_steps.get(result.nodeid)))
    return report


def _raised(
    excinfo: pytest.ExceptionInfo[BaseException] | None,
    report: pytest.TestReport,
    context: CheckContext[Any] | None,
) -> BaseException | Skipped | None:
    """What the check ended with, as the verdict reads it: a failure as the root cause its context
    says it stands for, a skip pytest made without an exception (a marker) as its reason."""
    error = excinfo.value if excinfo is not None else None
    if isinstance(error, CheckFailure) and context is not None:
        return context.reattribute(error)
    if error is None and report.skipped:
        longrepr = report.longrepr
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        return Skipped(reason.removeprefix("Skipped: "))
    return error


def _translate(
    report: pytest.TestReport, result: CheckResult, raised: BaseException | Skipped | None
) -> None:
    """The verdict as pytest shows it: outcomes that are no verdict on the server as skips, a SHOULD
    finding as a pass, a failure or an error with the suite's own text."""
    if result.outcome == Outcome.SKIP:
        if isinstance(raised, NotApplicable):
            _as_skipped(report, result.message)
    elif result.outcome == Outcome.BLOCKED:
        assert result.blocked_by is not None
        blocked = result.blocked_by
        _as_skipped(report, f"blocked by {blocked['requirement']} ({blocked['step']})")
    elif result.outcome == Outcome.FAIL:
        report.longrepr = render_failure(result, expected=result.expected)
    elif result.outcome == Outcome.WARN and raised is not None:
        report.outcome = "passed"
        report.longrepr = None
    elif result.outcome == Outcome.ERROR:
        report.longrepr = render_failure(result)


def _as_skipped(report: pytest.TestReport, reason: str) -> None:
    """Show an outcome that is no verdict on the server as a skip to pytest (and JUnit)."""
    report.outcome = "skipped"
    location = report.location
    report.longrepr = (str(location[0]), (location[1] or 0) + 1, reason)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    if active_run(config) is None:
        return None
    status = _teststatus(report) if report.when == "call" else None
    if config.get_verbosity() <= -2:  # -qq (the command's -q): the counts, no progress letters
        if status is None:
            status = _default_status(report)
        return status[0], "", ""
    return status


def _teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    outcome = dict(report.user_properties).get("amp_outcome")
    if outcome == Outcome.WARN:
        return "warned", "W", "WARN"
    if outcome == Outcome.ERROR:
        return "error", "E", "ERROR"
    return None


def _default_status(report: pytest.TestReport) -> tuple[str, str, str]:
    """pytest's own category of a report (with the xfail plugin's), which the counts line reads."""
    if hasattr(report, "wasxfail"):
        if report.skipped:
            return "xfailed", "x", "XFAIL"
        if report.passed:
            return "xpassed", "X", "XPASS"
    if report.when != "call" and report.passed:
        return "", "", ""
    if report.when != "call" and report.failed:
        return "error", "E", "ERROR"
    return report.outcome, ".", report.outcome.upper()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = active_run(session.config)
    if run is None:
        return
    # an interrupt engine.interrupt caught made the status INTERRUPTED (the argument is pytest's own)
    interrupted = pytest.ExitCode.INTERRUPTED in (exitstatus, session.exitstatus)
    run.interrupted = interrupted or bool(INTERRUPTED_BY)
    protocol_session = run.active_session
    output = worker_output(session.config)
    if output is not None:  # a worker: clean up its own data and tell the controller what it counted
        if not run.preflight_problem:
            store = run.shared_store
            if store is not None:  # another worker may still use the cells of steps this one shared
                store.done()
                shared = published_states(run)
                if shared and not store.all_done():  # else nothing waits (the last cleans all at once)
                    protocol_session.clean_up(sparing=shared)  # the rest, meanwhile
                    store.wait_for_workers(lambda: run.interrupted, timeout=CLEANUP_BARRIER_TIMEOUT)
            protocol_session.clean_up()
        output["amp"] = protocol_session.worker_summary()
        return
    controller = session.config.stash.get(CONTROLLER_KEY, None)
    if controller is not None:
        _settled_briefing(controller, run)
        controller.merge()
        if controller.missing:  # a worker died with checks in hand: no verdict on them
            run.interrupted = True
        expectations = session.config.stash.get(EXPECTATIONS_KEY, None)
        if expectations is not None:  # the workers matched them: mark each used entry here too
            for result in run.results.values():
                expectations.match(result.nodeid, result.name, result.requirements)
    if run.preflight_problem:
        # no check ran: the reports still say so (INCOMPLETE, the problem as why the suite sent no
        # more requests), so that CI keeps its artefacts; pytest's "307 deselected" line is not said
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        session.config.option.verbose = min(session.config.option.verbose, -2)
    else:
        protocol_session.clean_up()
    resolve_blocked(run)
    run.finished_monotonic = time.monotonic()
    expectations = session.config.stash.get(EXPECTATIONS_KEY, None)
    if expectations is not None:
        for nodeid, entry in requirements_met(expectations, list(run.results.values())).items():
            met = entry.as_report(Outcome.PASS)
            run.results[nodeid] = dataclasses.replace(run.results[nodeid], expectation=met)
        run.expectations_report = expectations.report_entry()
    # one report document for every output, so that `amp-conformance report R.json --junit J ...`
    # renders exactly what the live run wrote
    document = build_report(run)
    session.config.stash[REPORT_KEY] = document
    if run.options.json_path is not None:
        write_json_report(run, run.options.json_path, document)
    if run.options.junit_path is not None:
        from amp_conformance.reports.junit import write_junit

        problem = write_junit(document, run.options.junit_path)
        if problem:
            print(f"amp-conformance: {problem}", file=sys.stderr)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
    if run.options.html_path is not None:
        from amp_conformance.reports.html import write_html_report  # the reports load only when asked for

        problem = write_html_report(document, run.options.html_path)
        if problem:  # one line and exit 2, like a usage error
            print(f"amp-conformance: {problem}", file=sys.stderr)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
    options = run.options
    from amp_conformance.reports.ci_outputs import ci_outputs_wanted, write_ci_outputs

    if ci_outputs_wanted(options.markdown_path, options.badge_path, options.write_expectations_path):
        # a run that checked nothing is no baseline: an empty one would hide every known failure
        baseline = None if run.preflight_problem else options.write_expectations_path
        outputs = (options.markdown_path, options.badge_path, baseline)
        annotations = session.config.stash.setdefault(ANNOTATIONS_KEY, [])
        problems = write_ci_outputs(document, *outputs, emit=annotations.append)
        for problem in problems:
            print(f"amp-conformance: {problem}", file=sys.stderr)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if baseline is not None and not any("--write-expectations" in problem for problem in problems):
            entries = len(baseline_checks(check.to_json() for check in document.checks))
            print(f"amp-conformance: --write-expectations: {entries} entries to {baseline}", file=sys.stderr)
    if run.preflight_problem:
        protocol_session.close()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    run = active_run(config)
    if run is None or run.preflight_problem or is_worker(config):
        return
    document = config.stash.get(REPORT_KEY, None)
    terminalreporter.write_line(render_summary(run, document))
    if document is not None:  # the closing line states the model's counts, not pytest's own
        colour = _VERDICT_COLOURS.get(document.summary.verdict, "yellow")
        stats = ([(closing_counts(document), {colour: True})], colour)
        terminalreporter.build_summary_stats_line = lambda: stats
    if run.expectations_report is not None:
        strict = run.options.strict_expectations
        terminalreporter.write_line(
            render_expectations(run.results.values(), run.expectations_report, strict=strict)
        )
    annotations = config.stash.get(ANNOTATIONS_KEY, [])
    if annotations:
        # pytest leaves its progress line open ("... [100%]"): a workflow command counts only at
        # the start of a line, so each is written as a whole line of its own
        for line in annotations:
            terminalreporter.write_line(line)


def pytest_unconfigure(config: pytest.Config) -> None:
    controller = config.stash.get(CONTROLLER_KEY, None)
    if controller is not None:
        controller.close()
    run = active_run(config)
    if run is not None:
        run.close()
