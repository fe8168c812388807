"""``amp-conformance``: run the checks against a server (or the bundled one), list them, validate.

Exit codes: 0 no MUST check failed; 1 a MUST check failed; 2 usage error, unreachable server, or
checks that could not reach a verdict (errors).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from amp_conformance._version import __version__
from amp_conformance.engine.catalogue import expand_areas, levels_up_to
from amp_conformance.engine.client import normalise_base_url
from amp_conformance.engine.marking import CheckInfo, check_info
from amp_conformance.engine.options import (
    COMMAND_OPTION_SPECS,
    OPTION_SPECS,
    UsageError,
    build_options,
    parse_workers,
)
from amp_conformance.engine.progress import Progress
from amp_conformance.engine.report import verdict
from amp_conformance.engine.run import Run
from amp_conformance.plugin import HttpOverride, active_run

CHECKS_DIR = Path(__file__).resolve().parent / "amp01" / "checks"
#: The checks of each protocol (``--protocol``); each folder holds its own pytest.ini.
PROTOCOL_CHECKS = {"amp-0.1": CHECKS_DIR, "amp-1.1": Path(__file__).resolve().parent / "amp11" / "checks"}
EXIT_OK, EXIT_MUST_FAILED, EXIT_USAGE = 0, 1, 2


def _metavar(name: str) -> str:
    """A placeholder that names the kind of value (argparse would print AMP_<NAME>, which reads like an
    environment variable the command does not read)."""
    known = {"base-url": "URL", "openapi": "PATH|URL", "api-key": "AGENT=KEY", "server-env": "KEY=VALUE"}
    known |= {"app": "MODULE:ATTR", "server-cmd": "CMD", "seed": "N", "fuzz-examples": "N", "only": "AREAS"}
    known |= {"workers": "N|auto"}
    if name in known:
        return known[name]
    if name in ("timeout", "deadline", "fuzz-seconds", "startup-timeout"):
        return "SECONDS"
    return "TOKEN" if name.endswith("token") else "PATH"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="amp-conformance",
        description="Check an AMP v0.1.0 server against the spec, requirement by requirement. "
        "Without --base-url the bundled reference server is started and checked (the self-test). "
        "Subcommands: 'validate PATH...', 'validate-contract PATH|URL', "
        "'report REPORT.json [NEW.json] --html PATH' and 'diff OLD.json NEW.json' (see their --help). "
        "In CI: --server-cmd starts your server, --app checks a Python ASGI app in-process (docs/ci.md).",
    )
    for spec in (*OPTION_SPECS, *COMMAND_OPTION_SPECS):
        kwargs = dict(spec.kwargs)
        if kwargs.get("action") not in ("store_true", "count") and "choices" not in kwargs:
            kwargs.setdefault("metavar", _metavar(spec.name))
        parser.add_argument(f"--{spec.name}", dest=spec.dest, help=spec.help, **kwargs)
    parser.add_argument("--list", action="store_true", help="list every check with its requirement ids")
    parser.add_argument("--format", choices=["text", "json"], help="--list output format (default text)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="show each check as it runs")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress line, less output")
    parser.add_argument("--version", action="version", version=f"amp-conformance {__version__}")
    return parser


@dataclass
class SuiteOutcome:
    exit_code: int
    run: Run | None


class _Capture:
    """Keeps the run object of the pytest session so the command can decide its exit code."""

    def __init__(self) -> None:
        self.run: Run | None = None
        self.infos: list[tuple[str, CheckInfo]] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            info = check_info(item)
            if info is not None:
                self.infos.append((item.nodeid, info))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.run = active_run(session.config)


def _pytest_base_args(protocol: str = "amp-0.1") -> list[str]:
    # --assert=plain: checks judge through amp.expect, and rewriting would warn about modules
    # (this package among them) that are imported before pytest starts.
    checks = PROTOCOL_CHECKS.get(protocol, CHECKS_DIR)
    args = [str(checks), "-p", "no:cacheprovider", "--rootdir", str(checks), "--assert=plain"]
    # The checks drive schemathesis and hypothesis themselves: their pytest plugins would only add a
    # second of start-up to every process (each worker of a parallel run pays it)
    args += ["-p", "no:schemathesis", "-p", "no:hypothesispytest"]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        args += ["-p", "amp_conformance.plugin"]
    return args


def suite_args(values: dict[str, Any]) -> list[str]:
    """Turn command option values into ``--amp-*`` pytest arguments (``--flag=value``, so that a value
    starting with ``-``, as a random token may, is never read as an option)."""
    args: list[str] = []
    for spec in OPTION_SPECS:
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
        extra.append(HttpOverride(http))
    protocol = values.get("amp_protocol") or "amp-0.1"
    args = [*_pytest_base_args(protocol), *suite_args(values), "-q" if verbose == 0 else "-v"]
    workers = parse_workers(values.get("amp_workers"))
    if workers != 1:
        if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
            args += ["-p", "xdist.plugin"]
        args += ["-n", str(workers)]
    if quiet:
        args += ["-qq", "--no-header"]
    if values.get("amp_json") == "-":
        # the JSON report owns standard output; everything else goes to standard error
        with contextlib.redirect_stdout(sys.stderr):
            code = pytest.main(args, plugins=extra)
    else:
        code = pytest.main(args, plugins=extra)
    run = capture.run
    if code == pytest.ExitCode.USAGE_ERROR or run is None or run.preflight_problem:
        return SuiteOutcome(EXIT_USAGE, run)
    if code == pytest.ExitCode.NO_TESTS_COLLECTED or not run.results:
        print("amp-conformance: no checks selected", file=sys.stderr)
        return SuiteOutcome(EXIT_USAGE, run)
    if code == pytest.ExitCode.INTERRUPTED:
        return SuiteOutcome(EXIT_USAGE, run)
    return SuiteOutcome({"pass": EXIT_OK, "fail": EXIT_MUST_FAILED}.get(verdict(run), EXIT_USAGE), run)


def list_checks(protocol: str = "amp-0.1") -> list[dict[str, Any]]:
    """Every check with its requirement ids, level, area and title (validated by list.schema.json)."""
    capture = _Capture()
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main([*_pytest_base_args(protocol), "--collect-only", "-q"], plugins=[capture])
    return [
        {
            "id": nodeid,
            "requirements": list(info.requirements),
            "level": info.level,
            "area": info.area,
            "title": info.title,
        }
        for nodeid, info in capture.infos
    ]


def _selected(checks: list[dict[str, Any]], values: dict[str, Any]) -> list[dict[str, Any]]:
    """The checks ``--only`` and ``--level`` select (as a run would)."""
    areas = expand_areas(values["amp_only"]) if values.get("amp_only") else None
    levels = levels_up_to(values.get("amp_level") or "MAY")
    fuzz = not values.get("amp_no_fuzz")
    return [
        c
        for c in checks
        if (areas is None or c["area"] in areas) and c["level"] in levels and (fuzz or c["area"] != "fuzz")
    ]


def _print_list(fmt: str, values: dict[str, Any]) -> None:
    checks = _selected(list_checks(values.get("amp_protocol") or "amp-0.1"), values)
    if fmt == "json":
        document = {
            "list_version": "1.1",
            "tool_version": __version__,
            "protocol": values.get("amp_protocol") or "amp-0.1",
            "checks": checks,
        }
        print(json.dumps(document, indent=1))
        return
    for entry in checks:
        name = entry["id"].rsplit("::", 1)[-1]
        print(f"{entry['level']:<7}{entry['area']:<7}{name}")
        print(f"{'':<14}{', '.join(entry['requirements'])}: {entry['title']}")
    print(f"{len(checks)} checks")


def _preflight(url: str, timeout: float) -> str | None:
    """One clear reason when the server cannot be reached at all, else None."""
    api_base, _ = normalise_base_url(url)
    try:
        httpx.get(f"{api_base}/health", timeout=timeout)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        return f"cannot reach {url}: connection failed ({exc or type(exc).__name__})"
    except httpx.HTTPError:
        return None  # reachable but misbehaving: the checks will say how
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Hypothesis (under the fuzz area) keeps a cache in ./.hypothesis; the command should leave the
    # folder it is started in as it found it.
    os.environ.setdefault(
        "HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "amp-conformance-hypothesis")
    )
    if arguments and arguments[0] in ("validate", "validate-contract"):
        from amp_conformance import validator

        entry = validator.validate_main if arguments[0] == "validate" else validator.validate_contract_main
        return entry(arguments[1:])
    if arguments and arguments[0] == "report":
        from amp_conformance.reports.cli import report_main

        return report_main(arguments[1:])
    if arguments and arguments[0] == "diff":
        from amp_conformance.reports.diff_cli import diff_main

        return diff_main(arguments[1:])
    if arguments and arguments[0] == "matrix":
        from amp_conformance.matrix.cli import matrix_main

        return matrix_main(arguments[1:])
    parser = _parser()
    namespace = parser.parse_args(arguments)
    if namespace.format is not None and not namespace.list:
        print("amp-conformance: --format goes with --list", file=sys.stderr)
        return EXIT_USAGE
    if namespace.list:
        try:
            _print_list(namespace.format or "text", vars(namespace))
        except ValueError as exc:
            print(f"amp-conformance: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except BrokenPipeError:  # e.g. `amp-conformance --list | head`
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    values = vars(namespace)
    try:
        workers = parse_workers(values.get("amp_workers"))
        if workers != 1 and values.get("amp_app"):
            raise UsageError("--app checks the app in-process, which workers cannot share: use --server-cmd")
        if workers != 1 and values.get("amp_protocol") == "amp-1.1":
            raise UsageError("AMP v1.1 runs use one worker (its MCP channel is a single process)")
    except UsageError as exc:
        print(f"amp-conformance: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if values.get("amp_app") or values.get("amp_server_cmd"):
        from amp_conformance.engine.app_target import run_with_app
        from amp_conformance.engine.server_process import run_with_server

        def runner(values: dict[str, Any], http: httpx.Client | None, plugins: list[object]) -> int:
            return run_suite(
                values, http=http, verbose=namespace.verbose, quiet=namespace.quiet, plugins=plugins
            ).exit_code

        if values.get("amp_app"):
            return run_with_app(values, runner)
        return run_with_server(values, runner, active_run)
    if values.get("amp_protocol") == "amp-1.1":
        # AMP v1.1: the target is --base-url (REST) and/or --mcp-command; neither is the self-test of
        # the bundled server over both channels (the plugin starts it)
        try:
            build_options(values)
        except (UsageError, ValueError) as exc:
            print(f"amp-conformance: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if not values.get("amp_base_url") and not values.get("amp_mcp_command"):
            print(
                "amp-conformance: no target given, checking the bundled AMP v1.1 reference server "
                "(MCP and REST)"
            )
        return run_suite(values, verbose=namespace.verbose, quiet=namespace.quiet).exit_code
    if values.get("amp_base_url"):
        try:
            build_options(values)
            reason = _preflight(values["amp_base_url"], values["amp_timeout"])
        except (UsageError, ValueError) as exc:
            print(f"amp-conformance: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if reason:
            print(f"amp-conformance: {reason}", file=sys.stderr)
            return EXIT_USAGE
        return run_suite(values, verbose=namespace.verbose, quiet=namespace.quiet).exit_code
    from amp_conformance.amp01.selfserve import BundledServer

    with BundledServer(keys=True) as server:
        print(
            f"amp-conformance: no --base-url given, checking the bundled reference server at {server.url} "
            f"(API keys required, {len(server.api_keys)} agents)"
        )
        values.update(
            amp_base_url=server.url,
            amp_admin_token=server.admin_token,
            amp_allow_global_effects=True,
            amp_api_key=[f"{agent}={key}" for agent, key in server.api_keys.items()],
        )
        try:
            build_options(values)
        except UsageError as exc:
            print(f"amp-conformance: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return run_suite(values, verbose=namespace.verbose, quiet=namespace.quiet).exit_code
