"""The suite's options, declared once for both the pytest plugin (``--amp-NAME``) and the command
(``--NAME``), so the two can never drift apart."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amp_conformance.engine.catalogue import LEVELS, expand_areas, levels_up_to


@dataclass(frozen=True)
class OptionSpec:
    name: str
    help: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def dest(self) -> str:
        return "amp_" + self.name.replace("-", "_")


PROTOCOLS = ("amp-0.1", "amp-1.1")

OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("base-url", "URL of the AMP server, with or without /amp/v1 (enables the suite)"),
    OptionSpec(
        "mcp-command",
        "amp-1.1: the MCP server command (stdio); the suite starts and stops it",
    ),
    OptionSpec(
        "protocol",
        "the protocol to check: amp-0.1 (AMP v0.1.0 REST, the default) or amp-1.1 (smriti-memcore AMP v1.1)",
        {"default": "amp-0.1", "choices": list(PROTOCOLS)},
    ),
    OptionSpec("admin-token", "admin token for POST /lifecycle/run (never printed)"),
    OptionSpec(
        "api-key",
        "AGENT=KEY: an API key the suite may use for that agent (repeatable)",
        {"action": "append", "default": []},
    ),
    OptionSpec("api-keys-file", 'JSON file {"agent-id": "plain key", ...} of keys the suite may use'),
    OptionSpec("timeout", "seconds to wait for one response (default 10)", {"type": float, "default": 10.0}),
    OptionSpec(
        "deadline", "seconds one check may take in all (default 60)", {"type": float, "default": 60.0}
    ),
    OptionSpec("only", "run only these areas, comma-separated (e.g. acl,crud,fuzz)"),
    OptionSpec(
        "level",
        "run checks at this level and stricter: MUST, SHOULD or MAY (default MAY: all)",
        {"default": "MAY", "choices": [*LEVELS, *(lv.lower() for lv in LEVELS)]},
    ),
    OptionSpec("json", "write the JSON report to this path"),
    OptionSpec("junit", "write a JUnit XML report to this path"),
    OptionSpec("html", "write a self-contained HTML report to this path"),
    OptionSpec(
        "allow-global-effects",
        "allow store-wide operations such as POST /lifecycle/run (needs --admin-token)",
        {"action": "store_true", "default": False},
    ),
    OptionSpec("no-fuzz", "do not run the fuzz area", {"action": "store_true", "default": False}),
    OptionSpec(
        "keep-cells",
        "leave the cells the run created in place (no cleanup), so a report's curl lines can be replayed",
        {"action": "store_true", "default": False},
    ),
    OptionSpec("seed", "seed for generated data and fuzzing", {"type": int, "default": None}),
    OptionSpec("openapi", "contract (path or URL) the fuzz area loads; default: the bundled one"),
    OptionSpec(
        "fuzz-examples", "examples per operation and phase (default 25)", {"type": int, "default": 25}
    ),
    OptionSpec("fuzz-seconds", "time budget of the fuzz area (default 45)", {"type": float, "default": 45.0}),
    OptionSpec("markdown", "write a Markdown summary to this path (also appended to $GITHUB_STEP_SUMMARY)"),
    OptionSpec("badge", "write a shields.io endpoint JSON badge to this path"),
    OptionSpec("expectations", "TOML file of known gaps: check or requirement ids -> expected outcome"),
    OptionSpec(
        "strict-expectations",
        "an unexpected pass (expected to fail, passed) fails the run instead of warning",
        {"action": "store_true", "default": False},
    ),
    OptionSpec("write-expectations", "write an expectations file with this run's failures to this path"),
)

COMMAND_OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("server-cmd", "start the server under test with this command ({port}: a free port)"),
    OptionSpec(
        "server-env",
        "KEY=VALUE added to the environment of --server-cmd or --app (repeatable)",
        {"action": "append", "default": []},
    ),
    OptionSpec(
        "startup-timeout",
        "seconds to wait for the started server to answer GET /health (default 30)",
        {"type": float, "default": 30.0},
    ),
    OptionSpec("server-log", "keep the started server's output in this file"),
    OptionSpec("app", "check a Python ASGI app in-process: module:attribute (an app or a factory)"),
    OptionSpec(
        "workers",
        "run the checks in N worker processes at once (pytest-xdist; 'auto': one per core; default 1): "
        "for distant or slow servers, which then see up to N requests at a time",
        {"default": "1"},
    ),
)
"""Options of the command only (they start or load the server before pytest runs)."""


class UsageError(ValueError):
    """Options that cannot work together; the command exits 2 with this message."""


def parse_workers(value: object) -> int | str:
    """``--workers``: a whole number of at least 1, or ``auto``."""
    text = str(value if value is not None else "1").strip().lower()
    if text == "auto":
        return "auto"
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"--workers takes a number of at least 1 or 'auto', not {value!r}")
    return int(text)


@dataclass(frozen=True)
class SuiteOptions:
    """Validated options of one run."""

    base_url: str | None
    protocol: str = "amp-0.1"
    mcp_command: str | None = None
    admin_token: str | None = None
    api_keys: dict[str, str] = field(default_factory=dict)
    timeout: float = 10.0
    deadline: float = 60.0
    areas: frozenset[str] | None = None
    levels: frozenset[str] = frozenset(LEVELS)
    json_path: Path | None = None
    junit_path: Path | None = None
    html_path: Path | None = None
    allow_global_effects: bool = False
    fuzz: bool = True
    keep_cells: bool = False
    seed: int | None = None
    openapi: str | None = None
    fuzz_examples: int = 25
    fuzz_seconds: float = 45.0
    markdown_path: Path | None = None
    badge_path: Path | None = None
    expectations_path: Path | None = None
    strict_expectations: bool = False
    write_expectations_path: Path | None = None

    @property
    def keys_mode(self) -> bool:
        return bool(self.api_keys)

    def public_view(self) -> dict[str, Any]:
        """The options as the report shows them: secrets reduced to whether they were given."""
        return {
            "base_url": self.base_url,
            "protocol": self.protocol,
            "mcp_command": self.mcp_command,
            "admin_token_given": self.admin_token is not None,
            "api_key_agents": sorted(self.api_keys),
            "timeout": self.timeout,
            "deadline": self.deadline,
            "areas": sorted(self.areas) if self.areas is not None else None,
            "levels": [lv for lv in LEVELS if lv in self.levels],
            "allow_global_effects": self.allow_global_effects,
            "fuzz": self.fuzz,
            "keep_cells": self.keep_cells,
            "seed": self.seed,
            "openapi": self.openapi,
            "fuzz_examples": self.fuzz_examples,
            "fuzz_seconds": self.fuzz_seconds,
        }


def iter_specs() -> Iterator[OptionSpec]:
    yield from OPTION_SPECS


def _parse_keys(pairs: list[str], keys_file: str | None) -> dict[str, str]:
    keys: dict[str, str] = {}
    if keys_file:
        try:
            loaded = json.loads(Path(keys_file).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read --api-keys-file {keys_file}: {exc}") from None
        if not isinstance(loaded, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
        ):
            raise UsageError(f"--api-keys-file {keys_file} must be a JSON object of agent id -> key")
        keys.update(loaded)
    for pair in pairs:
        agent, sep, key = pair.partition("=")
        if not sep or not agent or not key:
            raise UsageError(f"--api-key takes AGENT=KEY, got {pair!r}")
        keys[agent] = key
    return keys


def build_options(values: dict[str, Any]) -> SuiteOptions:
    """Validate raw option values (keyed by :attr:`OptionSpec.dest`) into :class:`SuiteOptions`."""
    base_url = values.get("amp_base_url")
    protocol = str(values.get("amp_protocol") or "amp-0.1")
    mcp_command = values.get("amp_mcp_command")
    if mcp_command and protocol != "amp-1.1":
        raise UsageError("--mcp-command goes with --protocol amp-1.1")
    if not base_url and protocol != "amp-1.1":
        raise UsageError("--base-url is required")
    try:
        areas = frozenset(expand_areas(values["amp_only"])) if values.get("amp_only") else None
        levels = frozenset(levels_up_to(values.get("amp_level") or "MAY"))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if values.get("amp_timeout", 10.0) <= 0 or values.get("amp_deadline", 60.0) <= 0:
        raise UsageError("--timeout and --deadline must be positive")
    if values.get("amp_allow_global_effects") and not values.get("amp_admin_token"):
        raise UsageError("--allow-global-effects needs --admin-token")
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
    return SuiteOptions(
        base_url=base_url,
        protocol=protocol,
        mcp_command=mcp_command or None,
        admin_token=values.get("amp_admin_token"),
        api_keys=_parse_keys(values.get("amp_api_key") or [], values.get("amp_api_keys_file")),
        timeout=float(values.get("amp_timeout", 10.0)),
        deadline=float(values.get("amp_deadline", 60.0)),
        areas=areas,
        levels=levels,
        json_path=Path(json_path) if json_path else None,
        junit_path=Path(junit_path) if junit_path else None,
        html_path=Path(values["amp_html"]) if values.get("amp_html") else None,
        allow_global_effects=bool(values.get("amp_allow_global_effects")),
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
    )


def _path(value: Any) -> Path | None:
    return Path(value) if value else None


#: Report options whose paths are checked before the run starts (``--json -`` is standard output).
_REPORT_PATHS = (
    ("--json", "amp_json"),
    ("--junit", "amp_junit"),
    ("--html", "amp_html"),
    ("--markdown", "amp_markdown"),
    ("--badge", "amp_badge"),
    ("--write-expectations", "amp_write_expectations"),
)


def unwritable(path: Path) -> str | None:
    """Why a report could not be written to ``path`` (None when it can): found out before a run, not
    after minutes of checks."""
    if path.is_dir():
        return "is a directory"
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "cannot be written (permission denied)"
    return None
