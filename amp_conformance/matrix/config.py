"""The implementations file of a matrix (TOML): read and validated up front, before anything runs.

```toml
title = "Our AMP ecosystem"        # optional

[[implementation]]
name = "reference"                 # unique; the column's heading
protocol = "amp-0.1"               # amp-0.1 | amp-1.1
server-cmd = "{python} -m reference_server --port {port}"   # or base-url, mcp-command (amp-1.1), app
admin-token = "T"                  # optional; also allow-global-effects = true
api-keys = { agent-a = "KEY" }     # optional (or api-keys-file = "keys.json")
expectations = "gaps.toml"         # optional
environment = { AMP_REFERENCE_CONVENTION = "upstream" }   # optional: the run's (and so the server's)
```

Paths in the file are relative to the file's folder: each run starts there. Any problem is one
:class:`ConfigError` line naming the implementation and the key.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROTOCOLS = ("amp-0.1", "amp-1.1")
#: The targets and which protocols accept them.
TARGETS = {
    "base-url": PROTOCOLS,
    "server-cmd": PROTOCOLS,
    "mcp-command": ("amp-1.1",),
    "app": ("amp-0.1",),
}
_TOP_KEYS = {"title", "implementation"}
_STRING_KEYS = {"name", "protocol", "description", "admin-token", "api-keys-file", "expectations", *TARGETS}
_KEYS = {*_STRING_KEYS, "api-keys", "environment", "allow-global-effects", "startup-timeout"}
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
    admin_token: str | None = None
    allow_global_effects: bool = False
    api_keys: dict[str, str] = field(default_factory=dict)
    api_keys_file: str | None = None
    expectations: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    startup_timeout: float | None = None

    @property
    def target_kind(self) -> str:
        """``server-cmd``, ``base-url``, ``mcp-command`` or ``app`` (the first given, in that order)."""
        return next(kind for kind in ("server-cmd", "app", "mcp-command", "base-url") if kind in self.targets)


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


def _implementation(entry: object, number: int, taken: set[str], names: set[str]) -> Implementation:
    if not isinstance(entry, dict):
        raise ConfigError(f"implementation {number} is not a table ([[implementation]])")
    raw_name = entry.get("name")
    where = f"implementation {number}" + (f" ({raw_name!r})" if isinstance(raw_name, str) else "")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
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
    protocol = entry.get("protocol")
    if protocol is None:
        raise ConfigError(f"{where}: protocol is missing ({' or '.join(PROTOCOLS)})")
    if protocol not in PROTOCOLS:
        raise ConfigError(f"{where}: protocol {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    targets = {key: entry[key] for key in TARGETS if key in entry}
    if not targets:
        raise ConfigError(f"{where}: no target (give one of {', '.join(TARGETS)})")
    for key in targets:
        if protocol not in TARGETS[key]:
            raise ConfigError(f"{where}: {key} is not a target of {protocol}")
    if "app" in targets and len(targets) > 1:
        raise ConfigError(f"{where}: app checks in-process and goes with no other target")
    if "server-cmd" in targets and "mcp-command" in targets:
        raise ConfigError(f"{where}: give server-cmd or mcp-command, not both")
    if "server-cmd" in targets and "{port}" not in targets["server-cmd"] and "base-url" not in targets:
        raise ConfigError(f"{where}: server-cmd needs {{port}} (or a base-url giving the port)")
    flag = entry.get("allow-global-effects", False)
    if not isinstance(flag, bool):
        raise ConfigError(f"{where}: allow-global-effects must be true or false")
    if flag and "admin-token" not in entry:
        raise ConfigError(f"{where}: allow-global-effects needs an admin-token")
    timeout = entry.get("startup-timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ConfigError(f"{where}: startup-timeout must be a positive number of seconds")
    if "api-keys" in entry and "api-keys-file" in entry:
        raise ConfigError(f"{where}: give api-keys or api-keys-file, not both")
    keys = _strings(entry["api-keys"], f"{where}: api-keys") if "api-keys" in entry else {}
    environment = _strings(entry["environment"], f"{where}: environment") if "environment" in entry else {}
    return Implementation(
        name=raw_name,
        protocol=protocol,
        targets=targets,
        slug=slugify(raw_name, taken),
        description=entry.get("description", ""),
        admin_token=entry.get("admin-token"),
        allow_global_effects=flag,
        api_keys=keys,
        api_keys_file=entry.get("api-keys-file"),
        expectations=entry.get("expectations"),
        environment=environment,
        startup_timeout=float(timeout) if timeout is not None else None,
    )


def parse_config(document: Mapping[str, Any], path: Path) -> MatrixConfig:
    """Validate a parsed implementations file."""
    unknown = sorted(set(document) - _TOP_KEYS)
    if unknown:
        raise ConfigError(f"unknown top-level key {unknown[0]!r} (known: title, [[implementation]])")
    title = document.get("title", "AMP conformance matrix")
    if not isinstance(title, str):
        raise ConfigError("title must be a string")
    entries = document.get("implementation")
    if not isinstance(entries, list) or not entries:
        raise ConfigError("no implementation: add [[implementation]] tables")
    taken: set[str] = set()
    names: set[str] = set()
    implementations = [
        _implementation(entry, number, taken, names) for number, entry in enumerate(entries, start=1)
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
