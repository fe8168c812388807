"""Option values to a run's :class:`SuiteOptions`: the engine's checks, then the protocol's own."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import Any

import httpx

from amp_conformance.engine.catalogue import levels_up_to
from amp_conformance.engine.options import (
    _REPORT_PATHS,
    OptionValues,
    SuiteOptions,
    UsageError,
    _path,
    parse_max_in_flight,
    unwritable,
)
from amp_conformance.engine.protocol import AnyProtocol
from amp_conformance.engine.tiers import DEFAULT_TIER, in_tier
from amp_conformance.engine.vocabulary import Level, Outcome
from amp_conformance.fuzz.options import fuzz_settings

#: Report options that accept ``-`` (standard output), one at a time.
STDOUT_OUTPUTS = ("--json", "--markdown")


def check_url(flag: str, url: str) -> None:
    """A URL the run can use (httpx would raise InvalidURL mid-run): UsageError otherwise."""
    if any(c.isspace() for c in url):
        raise UsageError(f"{flag} {url!r}: a URL cannot contain spaces (percent-encode them as %20)")
    netloc = url.split("://", 1)[1].split("/", 1)[0] if "://" in url else ""
    if netloc.count("[") != netloc.count("]"):
        raise UsageError(
            f"{flag} {url!r} is not a valid URL: malformed, an unclosed bracket in the host "
            "(IPv6: http://[::1]:8000)"
        )
    try:
        parsed = httpx.URL(url)
        port = parsed.port
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise UsageError(f"{flag} {url!r} is not a valid URL: {exc}") from None
    if port is not None and not 0 < port <= 65535:
        raise UsageError(f"{flag} {url!r}: port {port} is out of range (1-65535)")
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


def check_names_of(values: dict[str, Any], protocol: AnyProtocol) -> frozenset[str] | None:
    """``--check NAME`` (repeatable) and ``--rerun-failed REPORT``: the checks to run, by name or
    node id, or None for no such selection."""
    from amp_conformance.engine.check_registry import checks_of

    names: set[str] = set()
    known: set[str] = set()
    if values.get("amp_check"):  # reading every check module costs a process ~0.2 s: only when asked
        specs = checks_of(protocol.name)
        known = {s.nodeid.rsplit("::", 1)[-1] for s in specs} | {s.nodeid for s in specs}
        known |= {name.split("[", 1)[0] for name in known}  # a parametrized check's base name: all of it
    for name in values.get("amp_check") or []:
        if name not in known:
            raise UsageError(f"--check {name}: no check of {protocol.name} has that name (--list shows them)")
        names.add(str(name))
    report = values.get("amp_rerun_failed")
    if report:
        import json

        try:
            document = json.loads(Path(report).read_text(encoding="utf-8"))
            checks = document["checks"]
            failed = [c for c in checks if c.get("outcome") in (Outcome.FAIL, Outcome.ERROR, Outcome.BLOCKED)]
            names.update(str(c.get("id")) for c in failed)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"--rerun-failed {report}: not a JSON report of this tool ({exc})") from None
        if not failed:
            raise UsageError(f"--rerun-failed {report}: the report has no failed, errored or blocked check")
    if not names and not values.get("amp_check") and not report:
        return None
    return frozenset(names)


Selection = tuple[frozenset[str] | None, frozenset[str], frozenset[str]]
"""What ``--only`` and ``--level`` select: areas (None: every area), requirement ids, levels."""


def selection_of(values: dict[str, Any], protocol: AnyProtocol) -> Selection:
    """``--only`` split into areas and requirement ids of ``protocol``, and ``--level``'s levels
    (UsageError for a word that is neither an area nor a requirement id)."""
    only = values.get("amp_only")
    known = {rid.upper(): rid for rid in protocol.catalogue.requirements}
    words = [w.strip() for w in str(only).split(",") if w.strip()] if only is not None else []
    requirements = frozenset(known[w.upper()] for w in words if w.upper() in known)
    area_words = [w for w in words if w.upper() not in known]
    try:
        areas = frozenset(protocol.catalogue.expand_areas(area_words)) if area_words else None
        levels = frozenset(levels_up_to(values.get("amp_level") or Level.MAY))
    except ValueError as exc:
        raise UsageError(f"{exc}; or a requirement id of {protocol.name} (--list shows them)") from None
    if only is not None and not words:
        raise UsageError(f"--only {only!r} names no area: give one or more, comma-separated (e.g. acl,crud)")
    return areas, requirements, levels


def selects(
    check: dict[str, Any], selection: Selection, names: frozenset[str] | None, tier: object = None
) -> bool:
    """Whether a check (an entry of ``--list``'s JSON) is in the selection and the ``--tier``, as the
    plugin's collection filter decides (``plugin._named``): ``names`` (``--check``, ``--rerun-failed``)
    match its name or node id, with its parameters or without them (every parameter of the function)."""
    areas, requirements, levels = selection
    if tier is not None and not in_tier(str(tier), check.get("tiers") or ()):
        return False
    nodeid = str(check["id"])
    base = nodeid.rsplit("::", 1)[-1]
    return (
        (areas is None or check["area"] in areas)
        and check["level"] in levels
        and (not requirements or bool(requirements & set(check["requirements"])))
        and (names is None or bool({base, base.split("[", 1)[0], nodeid, nodeid.split("[", 1)[0]} & names))
    )


def build_options(values: dict[str, Any], protocol: AnyProtocol) -> SuiteOptions:
    """Validate raw option values (keyed by :attr:`OptionSpec.dest`) into :class:`SuiteOptions` for a
    run of ``protocol``, which reads its own (its transport's target among them) through
    :class:`OptionValues`, parses and checks them."""
    named = OptionValues(values)
    base_url = protocol.target_url(named)
    areas, requirements, levels = selection_of(values, protocol)
    names = check_names_of(values, protocol)
    for flag, dest, default in (("--timeout", "amp_timeout", 10.0), ("--deadline", "amp_deadline", 60.0)):
        if values.get(dest, default) <= 0:
            raise UsageError(f"{flag} must be positive, not {values.get(dest)!r}")
    fuzz = fuzz_settings(named)
    if values.get("amp_startup_timeout") is not None and float(values["amp_startup_timeout"]) <= 0:
        raise UsageError(f"--startup-timeout must be positive, not {values['amp_startup_timeout']!r}")
    if fuzz.openapi and "://" in fuzz.openapi:
        check_url("--openapi", fuzz.openapi)
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
        requirements=requirements or None,
        check_names=names,
        levels=levels,
        tier=str(values.get("amp_tier") or DEFAULT_TIER),
        json_path=Path(json_path) if json_path else None,
        junit_path=Path(junit_path) if junit_path else None,
        html_path=Path(values["amp_html"]) if values.get("amp_html") else None,
        fuzz=fuzz.fuzz,
        seed=values.get("amp_seed"),
        openapi=fuzz.openapi,
        fuzz_examples=fuzz.fuzz_examples,
        fuzz_seconds=fuzz.fuzz_seconds,
        markdown_path=_path(values.get("amp_markdown")),
        badge_path=_path(values.get("amp_badge")),
        expectations_path=_path(values.get("amp_expectations")),
        strict_expectations=bool(values.get("amp_strict_expectations")),
        write_expectations_path=_path(values.get("amp_write_expectations")),
        protocol_options=protocol.parse_options(named),
        app=str(values["amp_app"]) if values.get("amp_app") else None,
        max_in_flight=parse_max_in_flight(values.get("amp_max_in_flight")),
    )
    protocol.validate(options)
    return options
