"""``amp-conformance``: run the checks against a server (or the bundled one), list them, validate,
render and compare reports.

Exit codes: 0 no MUST check failed; 1 a MUST check failed; 2 usage error, unreachable server, or
checks that could not reach a verdict (errors). The protocol (``--protocol``) is found in the
registry; this module names none.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from amp_conformance._version import __version__
from amp_conformance.engine import registry
from amp_conformance.engine.check_registry import checks_of
from amp_conformance.engine.configuration import build_options, check_names_of, selection_of, selects
from amp_conformance.engine.exits import run_exit_handlers
from amp_conformance.engine.http import BASE_URL
from amp_conformance.engine.interrupt import hold_until_the_session
from amp_conformance.engine.marking import MARK
from amp_conformance.engine.options import (
    COMMAND_MODE_VARIABLE,
    COMMAND_OPTION_SPECS,
    OneLineParser,
    OptionValues,
    SuiteOptions,
    UsageError,
    empty_option,
    parse_workers,
)
from amp_conformance.engine.parallel import INTERRUPT_GATE
from amp_conformance.engine.progress import Progress
from amp_conformance.engine.protocol import AnyProtocol, protocol_option_error
from amp_conformance.engine.report import verdict
from amp_conformance.engine.run import Run
from amp_conformance.engine.tiers import SMOKE
from amp_conformance.engine.vocabulary import Level
from amp_conformance.fuzz.options import NO_FUZZ
from amp_conformance.plugin import INTERRUPTED_BY, HttpOverride, active_run, all_option_specs

EXIT_OK, EXIT_MUST_FAILED, EXIT_USAGE = 0, 1, 2
PROG = "amp-conformance"
#: The most worker processes a run starts, whatever --workers asks (each is a pytest process).
MAX_WORKERS = 16


def _metavar(name: str) -> str:
    """A placeholder that names the kind of value (argparse would print AMP_<NAME>, which reads like an
    environment variable the command does not read)."""
    known = {"base-url": "URL", "openapi": "PATH|URL", "api-key": "AGENT=KEY", "server-env": "KEY=VALUE"}
    known |= {"app": "MODULE:ATTR", "server-cmd": "CMD", "seed": "N", "fuzz-examples": "N", "only": "AREAS"}
    known |= {"workers": "N|auto", "protocol": "NAME", "mcp-command": "CMD"}
    if name in known:
        return known[name]
    if name in ("timeout", "deadline", "fuzz-seconds", "startup-timeout"):
        return "SECONDS"
    return "TOKEN" if name.endswith("token") else "PATH"


def _validate(arguments: list[str]) -> int:
    from amp_conformance.validator import validate_main

    return validate_main(arguments)


def _validate_contract(arguments: list[str]) -> int:
    from amp_conformance.validator import validate_contract_main

    return validate_contract_main(arguments)


def _report(arguments: list[str]) -> int:
    from amp_conformance.reports.cli import report_main

    return report_main(arguments)


def _diff(arguments: list[str]) -> int:
    from amp_conformance.reports.diff_cli import diff_main

    return diff_main(arguments)


def _matrix(arguments: list[str]) -> int:
    from amp_conformance.matrix.cli import matrix_main

    return matrix_main(arguments)


#: Subcommand -> (entry point taking the rest of the command line, one line of help). Each parses
#: its own options (``amp-conformance NAME --help``).
SUBCOMMANDS: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "validate": (_validate, "validate AMP cells, AMR-lite files or MemoryCloud archives offline"),
    "validate-contract": (_validate_contract, "compare an OpenAPI document (path or URL) with the contract"),
    "report": (_report, "render a saved JSON report (HTML; with two reports, the page of what changed)"),
    "diff": (_diff, "compare two JSON reports: regressions and fixes (exit 1 on a regression)"),
    "matrix": (_matrix, "run many implementations from a TOML file and compare them on one page"),
}


class _VersionAction(argparse.Action):
    """``--version``: the tool's version and the catalogue of each registered protocol it checks (read
    only when asked, so an ordinary run loads no catalogue for it)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and the catalogues checked")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        lines = [f"{PROG} {__version__}"]
        for name in registry.names():
            try:
                protocol = registry.get(name)
                size = len(protocol.catalogue.requirements)
                lines.append(f"  {name}: {protocol.title} catalogue, {size} requirements")
            except Exception as error:  # a broken third-party protocol must not hide the version
                lines.append(f"  {name}: cannot be loaded ({error})")
        sys.stdout.write("\n".join(lines) + "\n")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        description="Check a server against its protocol's catalogue, requirement by requirement. "
        "Without a target the bundled reference server of the protocol is started and checked (the "
        "self-test). In CI: --server-cmd starts your server, --app checks a Python ASGI app in-process "
        "(docs/ci.md).",
    )
    commands = parser.add_subparsers(
        dest="command", metavar="{" + ",".join(SUBCOMMANDS) + "}", title="subcommands"
    )
    for name, (_, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, add_help=False, prog=f"{PROG} {name}")
        sub.add_argument("arguments", nargs=argparse.REMAINDER)
    for spec in (*all_option_specs(), *COMMAND_OPTION_SPECS):
        kwargs = dict(spec.kwargs)
        if kwargs.get("action") not in ("store_true", "count") and "choices" not in kwargs:
            kwargs.setdefault("metavar", _metavar(spec.name))
        parser.add_argument(f"--{spec.name}", dest=spec.dest, help=spec.help, **kwargs)
    parser.add_argument(
        "-k", dest="keyword", metavar="EXPR", help="pytest's -k: run only the checks whose names match EXPR"
    )
    parser.add_argument("--list", action="store_true", help="list every check with its requirement ids")
    parser.add_argument("--format", choices=["text", "json"], help="--list output format (default text)")
    parser.add_argument("--list-protocols", action="store_true", help="list the installed protocols")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="show each check as it runs")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress line, less output")
    parser.add_argument("--version", action=_VersionAction)
    return parser


@dataclass
class SuiteOutcome:
    exit_code: int
    run: Run | None


class _Capture:
    """Keeps the run object of the pytest session so the command can decide its exit code."""

    def __init__(self) -> None:
        self.run: Run | None = None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.run = active_run(session.config)


def _protocol(values: dict[str, Any]) -> AnyProtocol:
    try:
        return registry.get(str(values.get("amp_protocol") or registry.DEFAULT_PROTOCOL))
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def _pytest_base_args(protocol: AnyProtocol) -> list[str]:
    # --assert=plain: checks judge through amp.expect, and rewriting would warn about modules
    # (this package among them) that are imported before pytest starts.
    checks = protocol.checks_dir
    args = [str(checks), "-p", "no:cacheprovider", "--rootdir", str(checks), "--assert=plain"]
    # The checks drive schemathesis and hypothesis themselves: their pytest plugins would only add a
    # second of start-up to every process (each worker of a parallel run pays it); anyio's and xdist's
    # looponfail plugins serve no check either, and pytest's unraisable-exception plugin collects the
    # garbage twice as each process ends (~0.1 s of every worker's end and the run's) to report
    # exceptions from destructors, which are no finding about the server
    args += [
        "-p",
        "no:schemathesis",
        "-p",
        "no:hypothesispytest",
        "-p",
        "no:anyio",
        "-p",
        "no:xdist.looponfail",
        "-p",
        "no:unraisableexception",
    ]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        args += ["-p", "amp_conformance.plugin"]
    return args


def suite_args(values: dict[str, Any]) -> list[str]:
    """Turn command option values into ``--amp-*`` pytest arguments (``--flag=value``, so that a value
    starting with ``-``, as a random token may, is never read as an option)."""
    args: list[str] = []
    for spec in all_option_specs():
        value = values.get(spec.dest)
        if value is None or value is False or value == []:
            continue
        flag = f"--amp-{spec.name}"
        if value is True:
            args.append(flag)
        elif isinstance(value, list):
            args += [f"{flag}={entry}" for entry in value]
        else:
            args.append(f"{flag}={value}")
    return args


def run_suite(
    values: dict[str, Any],
    *,
    http: httpx.Client | None = None,
    verbose: int = 0,
    quiet: bool = False,
    plugins: Sequence[object] = (),
) -> SuiteOutcome:
    """Run the checks through pytest with option ``values`` (keyed by OptionSpec.dest)."""
    capture = _Capture()
    # The command runs pytest with -q: that is its default verbosity, at which the progress line shows.
    extra: list[object] = [capture, Progress(active_run, default_verbosity=-1), *plugins]
    if http is not None:
        extra.append(HttpOverride(http, app=values.get("amp_app")))
    protocol = _protocol(values)
    args = [*_pytest_base_args(protocol), *suite_args(values), "-q" if verbose == 0 else "-v"]
    if values.get("keyword"):
        args += ["-k", str(values["keyword"])]
    if verbose == 0:
        # each failure is shown once, in the suite's summary (request, response, reproduction);
        # -v adds pytest's FAILURES section and its short list
        args += ["--tb=no", "-rN"]
    workers = parse_workers(values.get("amp_workers"))
    if workers != 1:
        if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
            args += ["-p", "xdist.plugin"]
        args += ["-n", str(workers)]
    if quiet:
        args += ["-qq", "--no-header"]
    # the command says an interrupted run is INCOMPLETE in one line of its own (engine.interrupt):
    # an interrupt while pytest configures waits for the session, where it is caught
    hold_until_the_session()
    command_mode = os.environ.get(COMMAND_MODE_VARIABLE)
    os.environ[COMMAND_MODE_VARIABLE] = "1"  # the checks' words name the command's options, not the plugin's
    try:
        if "-" in (values.get("amp_json"), values.get("amp_markdown")):
            # the JSON report owns standard output; everything else goes to standard error
            with contextlib.redirect_stdout(sys.stderr):
                code = pytest.main(args, plugins=extra)
        else:
            code = pytest.main(args, plugins=extra)
    finally:
        INTERRUPT_GATE.release()
        if command_mode is None:
            os.environ.pop(COMMAND_MODE_VARIABLE, None)
    run = capture.run
    if INTERRUPTED_BY or (run is not None and run.interrupted) or code == pytest.ExitCode.INTERRUPTED:
        return SuiteOutcome(EXIT_USAGE, run)
    if code == pytest.ExitCode.USAGE_ERROR or run is None or run.preflight_problem:
        return SuiteOutcome(EXIT_USAGE, run)
    if code == pytest.ExitCode.NO_TESTS_COLLECTED or not run.results:
        print("amp-conformance: no checks selected", file=sys.stderr)
        return SuiteOutcome(EXIT_USAGE, run)
    return SuiteOutcome({"pass": EXIT_OK, "fail": EXIT_MUST_FAILED}.get(verdict(run), EXIT_USAGE), run)


def list_checks(protocol: str = registry.DEFAULT_PROTOCOL) -> list[dict[str, Any]]:
    """Every check with its requirement ids, the shared steps it uses (only when it declares some),
    level, area and title (validated by list.schema.json), read from the check registry (no pytest
    collection)."""
    return [
        {
            "id": spec.nodeid,
            "requirements": list(spec.requirements),
            **({"uses": list(spec.uses)} if spec.uses else {}),
            **({"tiers": list(spec.tiers)} if spec.tiers else {}),
            "level": str(spec.level),
            "area": spec.area,
            "title": spec.title,
        }
        for spec in checks_of(protocol)
    ]


def _selected(
    checks: list[dict[str, Any]], values: dict[str, Any], protocol: AnyProtocol
) -> list[dict[str, Any]]:
    """The checks ``--only`` (areas, requirement ids), ``--level``, ``--tier``, ``--check``,
    ``--rerun-failed`` and ``-k`` select (as a run would; without ``--tier``, every tier's)."""
    selection = selection_of(values, protocol)
    names = check_names_of(values, protocol)
    fuzz = not values.get(NO_FUZZ.dest)
    tier = values.get("amp_tier")  # --list without --tier lists every tier, each check marked
    keyword = _keyword_filter(values.get("keyword"))
    return [
        c
        for c in checks
        if selects(c, selection, names, tier) and (fuzz or c["area"] != "fuzz") and keyword(c)
    ]


def _keyword_filter(expression: object) -> Callable[[dict[str, Any]], bool]:
    """``-k EXPR`` over ``--list``'s entries, matched as pytest matches it (``KeywordMatcher``: a
    case-insensitive substring of a name of the item or its parents, or of its marks), from the node
    id, without collecting: the folder and module names, the check's name, the ``amp`` mark (and
    ``parametrize`` for a parametrized check). The same private module as :func:`_check_keyword`."""
    if not expression:
        return lambda check: True
    from _pytest.mark import KeywordMatcher
    from _pytest.mark.expression import Expression

    compiled = Expression.compile(str(expression))

    def wanted(check: dict[str, Any]) -> bool:
        path, *rest = str(check["id"]).split("::")
        names = {*path.split("/"), *rest, MARK, *check.get("tiers", ())}
        if "[" in check["id"]:
            names.add("parametrize")
        return compiled.evaluate(KeywordMatcher(frozenset(names)))

    return wanted


def _print_list(fmt: str, values: dict[str, Any]) -> None:
    protocol = _protocol(values)
    checks = _selected(list_checks(protocol.name), values, protocol)
    if fmt == "json":
        document = {
            "list_version": "1.1",
            "tool_version": __version__,
            "protocol": protocol.name,
            "checks": checks,
        }
        print(json.dumps(document, indent=1))
        return
    for entry in checks:
        name = entry["id"].rsplit("::", 1)[-1]
        tiers = f"   tier: {', '.join(entry['tiers'])}" if entry.get("tiers") else ""
        uses = tiers + (f"   uses: {', '.join(entry['uses'])}" if entry.get("uses") else "")
        print(f"{entry['level']:<7}{entry['area']:<7}{name}{uses}")
        print(f"{'':<14}{', '.join(entry['requirements'])}: {entry['title']}")
    print(f"{len(checks)} checks")


def _quiet_broken_pipe() -> None:
    """``amp-conformance --list | head``: the reader went away; end quietly."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _check_values(values: dict[str, Any], protocol: AnyProtocol) -> None:
    """Every usage problem the options show, before anything starts (UsageError)."""
    others = [p for p in registry.protocols() if p is not protocol]
    problem = protocol_option_error(protocol, values, others)
    if problem:
        raise UsageError(problem)
    # every option is checked before a server starts (a placeholder stands for the target a
    # --server-cmd, --app or the self-test will give)
    placeholder = {BASE_URL.dest: values.get(BASE_URL.dest) or "http://127.0.0.1:1"}
    build_options({**values, **placeholder}, protocol)
    # an empty value the options' own checks let through reads as not given: a self-test, a pass
    problem = empty_option(values, (*all_option_specs(), *COMMAND_OPTION_SPECS))
    if problem:
        raise UsageError(problem)
    _check_keyword(values.get("keyword"))
    _check_openapi(values.get("amp_openapi"))
    workers = parse_workers(values.get("amp_workers"))
    if workers != 1 and values.get("amp_app"):
        raise UsageError("--app checks the app in-process, which workers cannot share: use --server-cmd")
    if workers != 1:
        reason = protocol.parallel_problem(SuiteOptions(base_url=values.get(BASE_URL.dest)), in_process=False)
        if reason:
            raise UsageError(reason)
        values["amp_workers"] = str(_bounded_workers(workers, values, protocol))


def _check_keyword(expression: object) -> None:
    """``-k``: parsed as pytest will parse it, before any server starts. pytest has no public API for
    this: its expression parser (``_pytest.mark.expression``, private) is the least private route; a
    ``--collect-only`` run would say the same in seconds."""
    if not expression:
        return
    from _pytest.mark.expression import Expression

    try:
        Expression.compile(str(expression))
    except SyntaxError as exc:
        raise UsageError(f"-k {expression!r}: {exc.msg}") from None


def _check_openapi(location: object) -> None:
    """``--openapi PATH``: an OpenAPI document, found out before the run (a URL is fetched by the
    fuzz area)."""
    if not location or "://" in str(location):
        return
    from amp_conformance.validator.openapi import DocumentError, load_document

    try:
        load_document(str(location))
    except DocumentError as exc:
        raise UsageError(f"--openapi {location}: {exc}") from None


def _bounded_workers(workers: int | str, values: dict[str, Any], protocol: AnyProtocol) -> int:
    """``--workers`` bounded by the checks there are to share out and by :data:`MAX_WORKERS` (500
    pytest processes for 21 checks only load the machine), said in one line when it is lowered.

    The checks are counted only when a selection narrows the run (``--only``, ``--level``,
    ``--check``, ``--rerun-failed``): counting reads every check module (~0.2 s before any worker
    starts), and a whole suite has more checks than :data:`MAX_WORKERS` (a worker left without work
    is shut down at once)."""
    asked = (os.cpu_count() or 1) if workers == "auto" else int(workers)
    narrowed = (
        any(values.get(name) for name in ("amp_only", "amp_check", "amp_rerun_failed"))
        or str(values.get("amp_level") or Level.MAY).upper() != Level.MAY
        or values.get("amp_tier") == SMOKE
    )
    if not narrowed and asked <= MAX_WORKERS:
        return max(1, asked)
    units = len(_selected(list_checks(protocol.name), values, protocol))
    bounded = max(1, min(asked, units, MAX_WORKERS))
    if bounded < asked:
        why = f"{units} check(s) selected" if units <= MAX_WORKERS else f"at most {MAX_WORKERS}"
        print(f"amp-conformance: --workers {workers}: using {bounded} ({why})", file=sys.stderr)
    return bounded


def _target_options_given(values: dict[str, Any], protocol: AnyProtocol) -> dict[str, Any]:
    """The protocol's own options given on the command line (a self-test sets some of them itself)."""
    return {
        spec.dest: values.get(spec.dest)
        for spec in protocol.options
        if values.get(spec.dest) not in (None, False, [], spec.kwargs.get("default"))
    }


@contextlib.contextmanager
def _interruptible() -> Any:
    """SIGINT, SIGTERM (a cancelled CI job) and SIGHUP end the run as INCOMPLETE (exit 2). The first
    raises KeyboardInterrupt where the run is (pytest ends the session, the plugin reports it
    incomplete) and is remembered, so that a check which swallows it cannot make the run a verdict;
    a second is ignored while the run cleans up."""

    def handler(signum: int, frame: object) -> None:
        if INTERRUPTED_BY:
            return
        INTERRUPTED_BY.append(signum)
        if INTERRUPT_GATE.defer(signum):  # the workers are starting: raised once they all have
            return
        raise KeyboardInterrupt(f"signal {signum}")

    previous: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread: leave signals alone
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            # once interrupted, a late or repeated signal (one the run's libraries held back) must not
            # kill the process on its way out with exit -2 after it said INCOMPLETE: it is ignored
            signal.signal(sig, (lambda signum, frame: None) if INTERRUPTED_BY else old)


def entry() -> None:
    """The console script (and ``python -m amp_conformance``). Once :func:`main` returns, the run has
    ended and cleaned up (servers stopped, reports written and closed): the process ends there, after
    the run's own exit handlers (``engine.exits``), without the interpreter's teardown of all it
    imported (~0.3 s of every run's end). After an interrupt not even the handlers run, so that
    nothing the run's libraries left behind (a thread the interpreter would wait for, a late signal)
    turns it into a death by SIGINT (-2, seen once in 20 interrupts) after it said INCOMPLETE."""
    code = main()
    if not INTERRUPTED_BY:
        run_exit_handlers()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Hypothesis (under the fuzz area) keeps a cache in ./.hypothesis; the command should leave the
    # folder it is started in as it found it.
    os.environ.setdefault(
        "HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "amp-conformance-hypothesis")
    )
    if arguments and arguments[0] in SUBCOMMANDS:  # each subcommand parses its own options
        return SUBCOMMANDS[arguments[0]][0](arguments[1:])
    namespace = _parser().parse_args(arguments)
    values = vars(namespace)
    if namespace.format is not None and not namespace.list:
        print("amp-conformance: --format goes with --list", file=sys.stderr)
        return EXIT_USAGE
    try:
        if namespace.list_protocols:
            for name in registry.names():
                print(f"{name:<10}{registry.get(name).title}")
            return EXIT_OK
        if namespace.list:
            _print_list(namespace.format or "text", values)
            return EXIT_OK
    except (UsageError, ValueError) as exc:
        print(f"amp-conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        _quiet_broken_pipe()
        return EXIT_OK
    try:
        protocol = _protocol(values)
        _check_values(values, protocol)
    except (UsageError, ValueError) as exc:
        print(f"amp-conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE

    INTERRUPTED_BY.clear()
    try:
        with _interruptible():
            code = _run(namespace, values, protocol)
    except BaseException as exc:  # an interrupted run ends in one line, whatever was raised
        if not INTERRUPTED_BY and not isinstance(exc, KeyboardInterrupt):
            raise
        code = EXIT_USAGE
    if INTERRUPTED_BY:
        name = signal.Signals(INTERRUPTED_BY[0]).name
        print(f"amp-conformance: interrupted ({name}): INCOMPLETE, no verdict on the server", file=sys.stderr)
        return EXIT_USAGE
    return code


def _run(namespace: argparse.Namespace, values: dict[str, Any], protocol: AnyProtocol) -> int:
    def runner(values: dict[str, Any], http: httpx.Client | None, plugins: list[object]) -> int:
        return run_suite(
            values, http=http, verbose=namespace.verbose, quiet=namespace.quiet, plugins=plugins
        ).exit_code

    if values.get("amp_app"):
        from amp_conformance.engine.app_target import run_with_app

        return run_with_app(values, runner, protocol)
    if values.get("amp_server_cmd"):
        from amp_conformance.engine.server_process import run_with_server

        return run_with_server(values, runner, active_run, protocol)
    if not protocol.is_self_test(OptionValues(values)):
        try:
            options = build_options(values, protocol)
            reason = protocol.reachable(options)
        except (UsageError, ValueError) as exc:
            print(f"amp-conformance: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if reason:
            print(f"amp-conformance: {reason}", file=sys.stderr)
            return EXIT_USAGE
        return runner(values, None, [])
    given = _target_options_given(values, protocol)
    with contextlib.ExitStack() as stack:
        try:
            announcement = stack.enter_context(protocol.self_test(OptionValues(values)))
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # the bundled server's own settings (AMP_REFERENCE_*): one line, exit 2
            print(f"amp-conformance: the bundled reference server cannot start: {exc}", file=sys.stderr)
            return EXIT_USAGE
        overridden = [d for d, v in given.items() if values.get(d) != v]
        if overridden:
            flags = ", ".join("--" + d.removeprefix("amp_").replace("_", "-") for d in overridden)
            print(
                f"amp-conformance: {flags}: goes with a server you give (--base-url, --server-cmd, --app); "
                "the self-test sets its own",
                file=sys.stderr,
            )
            return EXIT_USAGE
        owned = "-" in (values.get("amp_json"), values.get("amp_markdown"))  # a report owns stdout
        print(f"amp-conformance: {announcement}", file=sys.stderr if owned else sys.stdout)
        try:
            build_options(values, protocol)
        except (UsageError, ValueError) as exc:
            print(f"amp-conformance: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return runner(values, None, [])
    return EXIT_USAGE  # pragma: no cover - the with block returns
