"""The suite's options, declared once for both the pytest plugin (``--amp-NAME``) and the command
(``--NAME``), so the two can never drift apart.

Each option is declared by what reads it: the engine's own below (:data:`OPTION_SPECS`), the HTTP
layer's ``--base-url`` (``engine.http``), the fuzz area's (``amp_conformance.fuzz.options``) and each
protocol's (:attr:`Protocol.options <amp_conformance.engine.protocol.Protocol.options>`). A protocol
reads its values through :class:`OptionValues`, by the names it declared.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amp_conformance.engine.vocabulary import LEVELS

#: Prefix of an option's ``dest`` (its key in the plugin's and the command's raw values).
DEST_PREFIX = "amp_"


def dest_of(name: str) -> str:
    """The raw-values key of the option declared as ``name`` (``base-url`` -> ``amp_base_url``)."""
    return DEST_PREFIX + name.replace("-", "_")


@dataclass(frozen=True)
class OptionSpec:
    """One option: ``--NAME`` in the command, ``--amp-NAME`` in the plugin; ``kwargs`` go to argparse
    (and pytest's ``addoption``) as given."""

    name: str
    help: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def dest(self) -> str:
        return dest_of(self.name)


class OptionValues(Mapping[str, object]):
    """The option values a protocol reads, keyed by the name each option was declared with
    (``values["base-url"]``, ``values.text("mcp-command")``), whatever the plugin and the command
    call them internally. A protocol's :meth:`~amp_conformance.engine.protocol.Protocol.self_test`
    sets its bundled server's target the same way (``values["base-url"] = url``): the view writes
    through to the run's values. An option nobody gave reads as None (its declared default when the
    parser applied one)."""

    def __init__(self, raw: MutableMapping[str, object] | None = None) -> None:
        self._raw: MutableMapping[str, object] = raw if raw is not None else {}

    def __getitem__(self, name: str) -> object:
        return self._raw[dest_of(name)]

    def __setitem__(self, name: str, value: object) -> None:
        self._raw[dest_of(name)] = value

    def update_values(self, **values: object) -> None:
        """Set several at once, by name with ``_`` for ``-`` (``base_url=...``)."""
        for name, value in values.items():
            self[name.replace("_", "-")] = value

    def __iter__(self) -> Iterator[str]:
        prefixed = (key for key in self._raw if key.startswith(DEST_PREFIX))
        return (key.removeprefix(DEST_PREFIX).replace("_", "-") for key in prefixed)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def text(self, name: str) -> str | None:
        """The value as text, None when not given (or empty)."""
        value = self.get(name)
        return str(value) if value not in (None, "") else None

    def flag(self, name: str) -> bool:
        return bool(self.get(name))

    def texts(self, name: str) -> list[str]:
        """A repeatable option's values (``action="append"``), as text."""
        value = self.get(name)
        if value is None:
            return []
        return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]


OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "protocol",
        "the protocol to check, by name (--list-protocols shows the installed ones; default: {default})",
        {"default": None},
    ),
    OptionSpec("timeout", "seconds to wait for one response (default 10)", {"type": float, "default": 10.0}),
    OptionSpec(
        "deadline", "seconds one check may take in all (default 60)", {"type": float, "default": 60.0}
    ),
    OptionSpec(
        "only",
        "run only these areas or requirements, comma-separated (--list shows both): a requirement id "
        "selects the checks citing it",
    ),
    OptionSpec(
        "check",
        "run only the checks of this name (repeatable; the name --list shows)",
        {"action": "append", "default": []},
    ),
    OptionSpec(
        "rerun-failed",
        "run only the checks that failed, errored or were blocked in this saved JSON report",
    ),
    OptionSpec(
        "level",
        "run checks at this level and stricter: MUST, SHOULD or MAY (default MAY: all)",
        {"default": "MAY", "choices": [*LEVELS, *(lv.lower() for lv in LEVELS)]},
    ),
    OptionSpec(
        "tier",
        "which checks to run: smoke (one probe per requirement, for pull requests), full (the default) "
        "or stress (full plus the checks that grow the store to hundreds of cells); --list without it "
        "lists every tier",
        {"default": None, "choices": ["smoke", "full", "stress"]},
    ),
    OptionSpec("json", "write the JSON report to this path"),
    OptionSpec("junit", "write a JUnit XML report to this path"),
    OptionSpec("html", "write a self-contained HTML report to this path"),
    OptionSpec("seed", "seed for generated data and fuzzing", {"type": int, "default": None}),
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
        "seconds to wait for the started server to answer its health check (default 30)",
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


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and ``see --help`` (exit 2), not the 18 lines of
    usage argparse prints first; a wrong choice lists the choices as the user types them."""

    def error(self, message: str) -> Any:
        for action in self._actions:
            if action.choices is None or not action.option_strings:
                continue
            flag = "/".join(action.option_strings)
            if message.startswith(f"argument {flag}: invalid choice: "):
                given = message.split("invalid choice: ", 1)[1].split(" (choose from", 1)[0].strip("'")
                seen: dict[str, str] = {}
                for choice in action.choices:
                    seen.setdefault(str(choice).upper(), str(choice))
                message = f"{action.option_strings[-1]}: {given} is not one of {', '.join(seen.values())}"
                break
        else:
            message = message.removeprefix("argument ")
        self.exit(2, f"{self.prog}: {message}; see --help\n")


def parse_workers(value: object) -> int | str:
    """``--workers``: a whole number of at least 1, or ``auto``."""
    text = str(value if value is not None else "1").strip().lower()
    if text == "auto":
        return "auto"
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"--workers takes a number of at least 1 or 'auto', not {value!r}")
    return int(text)


def parse_max_in_flight(value: object) -> int | None:
    """``--max-in-flight``: a whole number of at least 1, or None when not given."""
    if value is None:
        return None
    text = str(value).strip()
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"--max-in-flight takes a whole number of at least 1, not {value!r}")
    return int(text)


@dataclass(frozen=True)
class SuiteOptions:
    """Validated options of one run. ``protocol_options`` is what the protocol made of its own
    options (:meth:`Protocol.parse_options`): typed by the protocol, which reads it back through
    :meth:`Protocol.own_options <amp_conformance.engine.protocol.Protocol.own_options>`."""

    base_url: str | None
    """The target's URL when the protocol's transport has one (``engine.http``), else None."""
    protocol: str = ""
    timeout: float = 10.0
    deadline: float = 60.0
    areas: frozenset[str] | None = None
    requirements: frozenset[str] | None = None
    """Run only the checks citing one of these requirement ids (``--only ID``)."""
    check_names: frozenset[str] | None = None
    """Run only the checks of these names or node ids (``--check``, ``--rerun-failed``)."""
    levels: frozenset[str] = frozenset(LEVELS)
    tier: str = "full"
    """``--tier``: ``smoke`` runs the checks marked ``smoke``, ``full`` all but those marked ``stress``,
    ``stress`` every check (``engine.tiers``)."""
    json_path: Path | None = None
    junit_path: Path | None = None
    html_path: Path | None = None
    fuzz: bool = True
    seed: int | None = None
    openapi: str | None = None
    fuzz_examples: int = 25
    fuzz_seconds: float = 45.0
    markdown_path: Path | None = None
    badge_path: Path | None = None
    expectations_path: Path | None = None
    strict_expectations: bool = False
    write_expectations_path: Path | None = None
    protocol_options: object = None
    app: str | None = None
    """``--app module:attribute``: the checks reach that ASGI app in-process (curl lines then name
    the in-process origin; the report says how to replay them)."""
    max_in_flight: int | None = None
    """``--max-in-flight N``: the cap of the adaptive limit of requests in flight (``engine.limiter``)."""

    def public_view(self) -> dict[str, Any]:
        """The options as the report shows them: secrets reduced to whether they were given."""
        view: dict[str, Any] = {
            "base_url": self.base_url,
            "protocol": self.protocol,
            "timeout": self.timeout,
            "deadline": self.deadline,
            "areas": sorted(self.areas) if self.areas is not None else None,
            "requirements": sorted(self.requirements) if self.requirements is not None else None,
            "checks": sorted(self.check_names) if self.check_names is not None else None,
            "levels": [lv for lv in LEVELS if lv in self.levels],
            "tier": self.tier,
            "fuzz": self.fuzz,
            "seed": self.seed,
            "openapi": self.openapi,
            "fuzz_examples": self.fuzz_examples,
            "fuzz_seconds": self.fuzz_seconds,
            "app": self.app,
            "max_in_flight": self.max_in_flight,
        }
        public = getattr(self.protocol_options, "public_view", None)
        if callable(public):
            view.update(public())
        return view


def _path(value: object) -> Path | None:
    return Path(str(value)) if value else None


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
    if path.exists():
        return None
    # os.access says yes to root everywhere, /proc included: only creating a file there tells
    try:
        descriptor, probe = tempfile.mkstemp(dir=parent, prefix=".amp-conformance-probe-")
    except OSError as exc:
        return f"cannot be written: no file can be created in {parent} ({exc.strerror or exc})"
    os.close(descriptor)
    os.unlink(probe)
    return None


def empty_option(
    values: Mapping[str, object], specs: Iterator[OptionSpec] | tuple[OptionSpec, ...]
) -> str | None:
    """The usage error of an option given an empty value (``--server-cmd "$UNSET"``), which would
    otherwise read as not given and turn a CI job into a self-test that passes."""
    for spec in specs:
        value = values.get(spec.dest)
        entries = value if isinstance(value, list) else [value]
        if any(isinstance(entry, str) and not entry.strip() for entry in entries):
            return f"--{spec.name} is empty (an unset variable?): give a value or leave the option out"
    return None


#: Set to "1" while the ``amp-conformance`` command runs the checks (its console script, before a fork
#: server starts, and ``cli.run_suite``; a parallel run's workers inherit it): a check's words then name
#: the command's options (``--NAME``), else the plugin's (``--amp-NAME``).
COMMAND_MODE_VARIABLE = "AMP_CONFORMANCE_COMMAND"


def in_command_mode() -> bool:
    """The checks run under the ``amp-conformance`` command, not under pytest with the plugin."""
    return os.environ.get(COMMAND_MODE_VARIABLE) == "1"
