"""The implementations file of a matrix (TOML): read and validated up front, before anything runs.

```toml
title = "Our ecosystem"            # optional

[[implementation]]
name = "reference"                 # unique; the column's heading
protocol = "NAME"                  # any registered protocol (amp-conformance --list-protocols)
server-cmd = "{python} -m my_server --port {port}"   # or base-url, app, or a target option of the protocol
expectations = "gaps.toml"         # optional; also startup-timeout = 30, description = "..."
# or, for a run made elsewhere: report = "their-report.json" (no target; name and protocol optional)
environment = { MY_SETTING = "x" }   # optional: the run's (and so the server's)
# and the protocol's own options, by their command names: KEY = "VALUE" (a flag: KEY = true; a
# repeatable AGENT=VALUE option KEY: KEYs = { agent = "VALUE" })
```

The keys an implementation may give are the engine's common ones (:data:`COMMON_KEYS`) and its
protocol's declared options (``Protocol.declared_options``, :func:`options_table`). Paths in the file are
relative to the file's folder: each run starts there. Any problem is one :class:`ConfigError` line
naming the implementation and the key.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amp_conformance.engine import registry
from amp_conformance.engine.options import OptionSpec, OptionValues, UsageError
from amp_conformance.engine.protocol import AnyProtocol as Protocol

#: The targets every protocol's run takes (the engine's and the command's own options).
COMMON_TARGETS = ("base-url", "server-cmd", "app")
#: The key (and the target kind) of a column read from a saved JSON report instead of run.
REPORT_KIND = "report"
#: Keys of a column read from a saved report.
REPORT_KEYS = frozenset({"name", "protocol", "description", REPORT_KIND})
#: Keys of every implementation, whatever its protocol.
COMMON_KEYS = frozenset(
    {"name", "protocol", "description", "expectations", "environment", "startup-timeout", *COMMON_TARGETS}
)
_STRING_KEYS = {"name", "protocol", "description", "expectations", *COMMON_TARGETS}
_TOP_KEYS = {"title", "implementation"}
_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,80}$")


class ConfigError(ValueError):
    """An implementations file that cannot be used: one line, exit 2."""


@dataclass(frozen=True)
class Implementation:
    """One column of the matrix: what to run and how."""

    name: str
    protocol: str
    targets: dict[str, str]
    slug: str
    description: str = ""
    expectations: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    startup_timeout: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    """The protocol's own options, by their command names (a repeatable one as a list of items)."""
    report: str | None = None
    """A saved JSON report this column reads instead of running (``matrix.saved``)."""

    @property
    def target_kind(self) -> str:
        """``server-cmd``, ``app``, a protocol's own target option, or ``base-url`` (the first given)."""
        order = ["server-cmd", "app", *(k for k in self.targets if k not in COMMON_TARGETS), "base-url"]
        return next(kind for kind in order if kind in self.targets)


def table_key(spec: OptionSpec) -> str:
    """The file's key of a protocol option: its name, or for a repeatable one its plural (a table)."""
    return spec.name + "s" if spec.kwargs.get("action") == "append" else spec.name


def options_table(protocol: Protocol) -> dict[str, OptionSpec]:
    """The file's keys of ``protocol``'s own options -> their declarations."""
    return {table_key(spec): spec for spec in protocol.declared_options}


def target_options(protocol: Protocol) -> tuple[str, ...]:
    """The names of ``protocol``'s own options that name a target by themselves (``is_self_test``
    says so: a run given one checks that, not the bundled server)."""
    return tuple(
        spec.name
        for spec in protocol.declared_options
        if not protocol.is_self_test(OptionValues({spec.dest: "x"}))
    )


@dataclass(frozen=True)
class MatrixConfig:
    path: Path
    title: str
    implementations: list[Implementation]

    @property
    def directory(self) -> Path:
        return self.path.resolve().parent


def slugify(name: str, taken: set[str]) -> str:
    """A file-name-safe, unique id for ``name`` (reports, badges and site pages are named by it)."""
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "implementation"
    slug, number = base, 2
    while slug in taken:
        slug, number = f"{base}-{number}", number + 1
    taken.add(slug)
    return slug


def _strings(value: object, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k for k, v in value.items()
    ):
        raise ConfigError(f'{what} must be a table of strings (KEY = "VALUE")')
    return dict(value)


def _protocol(entry: Mapping[str, Any], where: str) -> Protocol:
    name = entry.get("protocol")
    known = registry.names()
    if name is None:
        raise ConfigError(f"{where}: protocol is missing ({' or '.join(known)})")
    if not isinstance(name, str) or name not in known:
        raise ConfigError(f"{where}: protocol {name!r} is not one of {', '.join(known)}")
    try:
        return registry.get(name)
    except (ImportError, TypeError) as exc:
        raise ConfigError(f"{where}: protocol {name!r} cannot be loaded: {exc}") from None


def _foreign(key: str, protocol: Protocol) -> str | None:
    """Why ``key`` is no key of ``protocol`` when another registered protocol declares it."""
    for other in registry.protocols():
        if other is protocol or key not in options_table(other):
            continue
        if options_table(other)[key].name in target_options(other):
            return f"{key} is not a target of {protocol.name}"
        return f"{key} is not an option of {protocol.name} (it goes with protocol {other.name})"
    return None


def _option_value(spec: OptionSpec, value: object, where: str) -> Any:
    """A protocol option's value as the file gives it, checked against its declaration."""
    key = table_key(spec)
    action, kind = spec.kwargs.get("action"), spec.kwargs.get("type")
    if action == "store_true":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be true or false")
        return value
    if action == "append":
        return [f"{k}={v}" for k, v in _strings(value, f"{where}: {key}").items()]
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: {key} must be a number")
        return value
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key} must be a non-empty string")
    return value


def _saved(
    entry: Mapping[str, Any], where: str, taken: set[str], names: set[str], directory: Path
) -> Implementation:
    """An entry naming a saved report: checked here, read when the matrix is built (an unreadable
    report is a column that says so, not a bad file)."""
    unknown = sorted(set(entry) - REPORT_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: {unknown[0]} does not go with report (a saved run: {', '.join(sorted(REPORT_KEYS))})"
        )
    for key in set(entry) & REPORT_KEYS:
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise ConfigError(f"{where}: {key} must be a non-empty string")
    if "protocol" in entry:
        _protocol(entry, where)
    name = entry.get("name")
    if name is not None:
        if not _NAME.match(name):
            raise ConfigError(f"{where}: name must be 1 to 80 printable characters")
        if name in names:
            raise ConfigError(f"{where}: the name {name!r} is used twice")
        names.add(name)
    shown = entry[REPORT_KIND]
    return Implementation(
        name=name or "",
        protocol=entry.get("protocol", ""),
        targets={REPORT_KIND: shown},
        slug=slugify(name, taken) if name is not None else "",
        description=entry.get("description", ""),
        report=str(directory / shown),
    )


def _implementation(
    entry: object, number: int, taken: set[str], names: set[str], directory: Path
) -> Implementation:
    if not isinstance(entry, dict):
        raise ConfigError(f"implementation {number} is not a table ([[implementation]])")
    raw_name = entry.get("name")
    where = f"implementation {number}" + (f" ({raw_name!r})" if isinstance(raw_name, str) else "")
    if REPORT_KIND in entry:
        return _saved(entry, where, taken, names, directory)
    protocol = _protocol(entry, where)
    own = options_table(protocol)
    targets_of_protocol = (*COMMON_TARGETS, *target_options(protocol))
    keys = COMMON_KEYS | set(own)
    unknown = sorted(set(entry) - keys)
    if unknown:
        key = unknown[0]
        raise ConfigError(
            f"{where}: {_foreign(key, protocol) or f'unknown key {key!r}'} (known: {', '.join(sorted(keys))})"
        )
    for key in _STRING_KEYS & set(entry):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise ConfigError(f"{where}: {key} must be a non-empty string")
    if not isinstance(raw_name, str):
        raise ConfigError(f"{where}: name is missing")
    if not _NAME.match(raw_name):
        raise ConfigError(f"{where}: name must be 1 to 80 printable characters")
    if raw_name in names:
        raise ConfigError(f"{where}: the name {raw_name!r} is used twice")
    names.add(raw_name)
    options = {own[key].name: _option_value(own[key], entry[key], where) for key in own if key in entry}
    targets = {key: entry[key] for key in targets_of_protocol if key in entry}
    if not targets:
        raise ConfigError(f"{where}: no target (give one of {', '.join(targets_of_protocol)})")
    if "app" in targets and len(targets) > 1:
        raise ConfigError(f"{where}: app checks in-process and goes with no other target")
    own_targets = [key for key in targets if key not in COMMON_TARGETS]
    if "server-cmd" in targets and own_targets:
        raise ConfigError(f"{where}: give server-cmd or {own_targets[0]}, not both")
    if "server-cmd" in targets and "{port}" not in targets["server-cmd"] and "base-url" not in targets:
        raise ConfigError(f"{where}: server-cmd needs {{port}} (or a base-url giving the port)")
    timeout = entry.get("startup-timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ConfigError(f"{where}: startup-timeout must be a positive number of seconds")
    environment = _strings(entry["environment"], f"{where}: environment") if "environment" in entry else {}
    _check_options(
        protocol, {**options, **{k: v for k, v in targets.items() if k in own_targets}}, where, directory
    )
    return Implementation(
        name=raw_name,
        protocol=protocol.name,
        targets={k: str(v) for k, v in targets.items()},
        slug=slugify(raw_name, taken),
        description=entry.get("description", ""),
        expectations=entry.get("expectations"),
        environment=environment,
        startup_timeout=float(timeout) if timeout is not None else None,
        options={k: v for k, v in options.items() if k not in own_targets},
    )


def _as_run(value: Any) -> Any:
    """A value as the run receives it: ``{python}`` is the interpreter running the matrix."""
    return value.replace("{python}", shlex.quote(sys.executable)) if isinstance(value, str) else value


def _check_options(protocol: Protocol, options: Mapping[str, Any], where: str, directory: Path) -> None:
    """The protocol's own judgement of its options (as its run would judge them, from the file's
    folder where the run starts): its one-line reason as the file's problem."""
    values = {
        spec.dest: _as_run(options.get(spec.name, spec.kwargs.get("default")))
        for spec in protocol.declared_options
    }
    try:
        with contextlib.chdir(directory):
            protocol.parse_options(OptionValues(values))
    except UsageError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def parse_config(document: Mapping[str, Any], path: Path) -> MatrixConfig:
    """Validate a parsed implementations file."""
    unknown = sorted(set(document) - _TOP_KEYS)
    if unknown:
        raise ConfigError(f"unknown top-level key {unknown[0]!r} (known: title, [[implementation]])")
    title = document.get("title", "Conformance matrix")
    if not isinstance(title, str):
        raise ConfigError("title must be a string")
    entries = document.get("implementation")
    if not isinstance(entries, list) or not entries:
        raise ConfigError("no implementation: add [[implementation]] tables")
    taken: set[str] = set()
    names: set[str] = set()
    implementations = [
        _implementation(entry, number, taken, names, path.resolve().parent)
        for number, entry in enumerate(entries, start=1)
    ]
    return MatrixConfig(path, title, implementations)


def load_config(path: Path) -> MatrixConfig:
    """Read and validate ``path``; ConfigError says what is wrong, in one line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not TOML: {exc}") from None
    try:
        return parse_config(document, path)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
