"""Option values to a run's :class:`SuiteOptions`: the engine's checks, then the protocol's own."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import Any

import httpx

from amp_conformance.engine.catalogue import levels_up_to
from amp_conformance.engine.options import _REPORT_PATHS, SuiteOptions, UsageError, _path, unwritable
from amp_conformance.engine.protocol import Protocol

#: Report options that accept ``-`` (standard output), one at a time.
STDOUT_OUTPUTS = ("--json", "--markdown")


def check_url(flag: str, url: str) -> None:
    """A URL the run can use (httpx would raise InvalidURL mid-run): UsageError otherwise."""
    if any(c.isspace() for c in url):
        raise UsageError(f"{flag} {url!r}: a URL cannot contain spaces (percent-encode them as %20)")
    try:
        parsed = httpx.URL(url)
        parsed.port  # noqa: B018 - parsing the port is the check
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise UsageError(f"{flag} {url!r} is not a valid URL: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise UsageError(f"{flag} {url!r} is not an http(s) URL with a host")


def check_command(flag: str, command: str) -> None:
    """A command whose program exists and can be run (found before any server starts)."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"{flag} {command!r}: {exc}") from None
    if not words:
        raise UsageError(f"{flag} is empty: give the command to start")
    program = words[0]
    if os.sep in program:
        if not os.path.isfile(program) or not os.access(program, os.X_OK):
            raise UsageError(f"{flag}: {program} is not an executable file")
    elif shutil.which(program) is None:
        raise UsageError(f"{flag}: {program!r} is not found on PATH")


def build_options(values: dict[str, Any], protocol: Protocol) -> SuiteOptions:
    """Validate raw option values (keyed by :attr:`OptionSpec.dest`) into :class:`SuiteOptions` for a
    run of ``protocol`` (which parses and checks its own options)."""
    base_url = values.get("amp_base_url")
    if base_url:
        check_url("--base-url", str(base_url))
    try:
        only = values.get("amp_only")
        areas = frozenset(protocol.catalogue.expand_areas(only)) if only else None
        levels = frozenset(levels_up_to(values.get("amp_level") or "MAY"))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if only is not None and not areas:
        raise UsageError(f"--only {only!r} names no area: give one or more, comma-separated (e.g. acl,crud)")
    for flag, dest, default in (("--timeout", "amp_timeout", 10.0), ("--deadline", "amp_deadline", 60.0)):
        if values.get(dest, default) <= 0:
            raise UsageError(f"{flag} must be positive, not {values.get(dest)!r}")
    if int(values.get("amp_fuzz_examples", 25)) < 1:
        raise UsageError(f"--fuzz-examples must be at least 1, not {values.get('amp_fuzz_examples')!r}")
    if float(values.get("amp_fuzz_seconds", 45.0)) <= 0:
        raise UsageError(f"--fuzz-seconds must be positive, not {values.get('amp_fuzz_seconds')!r}")
    if values.get("amp_startup_timeout") is not None and float(values["amp_startup_timeout"]) <= 0:
        raise UsageError(f"--startup-timeout must be positive, not {values['amp_startup_timeout']!r}")
    openapi = values.get("amp_openapi")
    if openapi:
        if "://" in str(openapi):
            check_url("--openapi", str(openapi))
        elif not Path(openapi).is_file():
            raise UsageError(f"--openapi {openapi}: no such file")
    if values.get("amp_mcp_command"):  # (--server-cmd is checked by the server process, as early)
        check_command("--mcp-command", str(values["amp_mcp_command"]))
    stdout_outputs = [flag for flag, dest in _REPORT_PATHS if values.get(dest) == "-"]
    if len(stdout_outputs) > 1:
        both = " and ".join(stdout_outputs)
        raise UsageError(f"{both} each ask for standard output: give '-' to one of them")
    for flag in stdout_outputs:
        if flag not in STDOUT_OUTPUTS:
            raise UsageError(f"{flag} -: {flag} writes a file, not standard output; give a path")
    if (values.get("amp_server_env") or values.get("amp_server_log")) and not (
        values.get("amp_server_cmd") or values.get("amp_app")
    ):
        raise UsageError("--server-env and --server-log go with --server-cmd (or --server-env with --app)")
    if values.get("amp_expectations"):  # a malformed file is a usage error before anything starts
        from amp_conformance.engine.expectations import ExpectationsError, load_expectations

        try:
            load_expectations(Path(values["amp_expectations"]))
        except ExpectationsError as exc:
            raise UsageError(str(exc)) from None
    json_path = values.get("amp_json")
    junit_path = values.get("amp_junit")
    for flag, dest in _REPORT_PATHS:
        value = values.get(dest)
        if value and value != "-":
            problem = unwritable(Path(value))
            if problem:
                raise UsageError(f"{flag} {value}: {problem}")
    options = SuiteOptions(
        base_url=base_url,
        protocol=protocol.name,
        timeout=float(values.get("amp_timeout", 10.0)),
        deadline=float(values.get("amp_deadline", 60.0)),
        areas=areas,
        levels=levels,
        json_path=Path(json_path) if json_path else None,
        junit_path=Path(junit_path) if junit_path else None,
        html_path=Path(values["amp_html"]) if values.get("amp_html") else None,
        fuzz=not values.get("amp_no_fuzz", False),
        keep_cells=bool(values.get("amp_keep_cells")),
        seed=values.get("amp_seed"),
        openapi=values.get("amp_openapi"),
        fuzz_examples=int(values.get("amp_fuzz_examples", 25)),
        fuzz_seconds=float(values.get("amp_fuzz_seconds", 45.0)),
        markdown_path=_path(values.get("amp_markdown")),
        badge_path=_path(values.get("amp_badge")),
        expectations_path=_path(values.get("amp_expectations")),
        strict_expectations=bool(values.get("amp_strict_expectations")),
        write_expectations_path=_path(values.get("amp_write_expectations")),
        protocol_options=protocol.parse_options(values),
    )
    protocol.validate(options)
    return options
