"""Option values to a run's :class:`SuiteOptions`: the engine's checks, then the protocol's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amp_conformance.engine.catalogue import levels_up_to
from amp_conformance.engine.options import _REPORT_PATHS, SuiteOptions, UsageError, _path, unwritable
from amp_conformance.engine.protocol import Protocol


def build_options(values: dict[str, Any], protocol: Protocol) -> SuiteOptions:
    """Validate raw option values (keyed by :attr:`OptionSpec.dest`) into :class:`SuiteOptions` for a
    run of ``protocol`` (which parses and checks its own options)."""
    base_url = values.get("amp_base_url")
    try:
        only = values.get("amp_only")
        areas = frozenset(protocol.catalogue.expand_areas(only)) if only else None
        levels = frozenset(levels_up_to(values.get("amp_level") or "MAY"))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if values.get("amp_timeout", 10.0) <= 0 or values.get("amp_deadline", 60.0) <= 0:
        raise UsageError("--timeout and --deadline must be positive")
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
        if value and not (value == "-" and flag == "--json"):
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
