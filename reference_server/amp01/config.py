"""Server settings, read once from the environment (see docs/ARCHITECTURE.md for the variables)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from reference_server.amp01.auth import load_keys_file, validate_keys
from reference_server.amp01.config_error import ConfigError
from reference_server.amp01.faults import Faults, UnknownFaultError

Convention = Literal["reference", "upstream"]
IdForm = Literal["prefixed", "bare"]

MAX_PAGE_SIZE = 100
"""Largest ``limit`` list and search accept; fixed, and reported in ``/spec``."""

RETENTION_DAYS = 30
"""How long a deleted cell is kept before it may be purged (the spec's floor)."""

ARCHIVE_AFTER_DAYS = 30
"""How long a cell stays stale (without update or access) before a pass archives it."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _bool(environ: Mapping[str, str], name: str, default: bool) -> bool:
    raw = environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean (use true/false, 1/0)")


def _int(environ: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ConfigError(f"{name}={value} must be at least {minimum}")
    return value


@dataclass(frozen=True)
class Settings:
    """Everything the server enforces and advertises; ``/spec`` is built from these same values."""

    convention: Convention = "reference"
    id_form: IdForm = "prefixed"
    faults: frozenset[str] = frozenset()
    admin_token: str | None = None
    api_keys_file: str | None = None
    api_keys: Mapping[str, str] | None = field(default=None, compare=False, hash=False)
    """Agent id -> ``sha256:<hex>`` digest. Loaded from ``api_keys_file`` when that is set."""
    scoring_patch_limit: int = 5
    scoring_patch_window_seconds: int = 3600
    max_cell_size_bytes: int = 65536
    lifecycle_enabled: bool = True
    lifecycle_interval_seconds: int = 3600
    purge_retention: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "faults", frozenset(self.faults))
        if self.convention not in ("reference", "upstream"):
            raise ConfigError(
                f"AMP_REFERENCE_CONVENTION must be 'reference' or 'upstream', not {self.convention!r}"
            )
        if self.id_form not in ("prefixed", "bare"):
            raise ConfigError(f"AMP_REFERENCE_ID_FORM must be 'prefixed' or 'bare', not {self.id_form!r}")
        try:
            Faults(self.faults)
        except UnknownFaultError as exc:
            raise ConfigError(f"AMP_REFERENCE_FAULTS: {exc}") from None
        if self.scoring_patch_limit < 0:
            raise ConfigError("AMP_SCORING_PATCH_LIMIT must be >= 0")
        if self.scoring_patch_window_seconds < 1:
            raise ConfigError("AMP_SCORING_PATCH_WINDOW_SECONDS must be >= 1")
        if self.max_cell_size_bytes < 1:
            raise ConfigError("AMP_MAX_CELL_SIZE_BYTES must be >= 1")
        if self.lifecycle_interval_seconds < 1:
            raise ConfigError("AMP_LIFECYCLE_INTERVAL_SECONDS must be >= 1")
        if self.admin_token is not None and not self.admin_token:
            object.__setattr__(self, "admin_token", None)
        if self.api_keys is None and self.api_keys_file:
            object.__setattr__(self, "api_keys", load_keys_file(self.api_keys_file))
        if self.api_keys is not None:
            object.__setattr__(self, "api_keys", validate_keys(self.api_keys, source="api_keys"))

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Read the ``AMP_*`` variables; raises ``ConfigError`` on anything malformed."""
        convention = environ.get("AMP_REFERENCE_CONVENTION", "reference").strip().lower() or "reference"
        id_form = environ.get("AMP_REFERENCE_ID_FORM", "prefixed").strip().lower() or "prefixed"
        if convention not in ("reference", "upstream"):
            raise ConfigError(
                f"AMP_REFERENCE_CONVENTION must be 'reference' or 'upstream', not {convention!r}"
            )
        if id_form not in ("prefixed", "bare"):
            raise ConfigError(f"AMP_REFERENCE_ID_FORM must be 'prefixed' or 'bare', not {id_form!r}")
        try:
            faults = Faults.parse(environ.get("AMP_REFERENCE_FAULTS")).names
        except UnknownFaultError as exc:
            raise ConfigError(f"AMP_REFERENCE_FAULTS: {exc}") from None
        keys_file = environ.get("AMP_API_KEYS_FILE") or None
        return cls(
            convention="upstream" if convention == "upstream" else "reference",
            id_form="bare" if id_form == "bare" else "prefixed",
            faults=faults,
            admin_token=environ.get("AMP_ADMIN_TOKEN") or None,
            api_keys_file=keys_file,
            scoring_patch_limit=_int(environ, "AMP_SCORING_PATCH_LIMIT", 5, 0),
            scoring_patch_window_seconds=_int(environ, "AMP_SCORING_PATCH_WINDOW_SECONDS", 3600, 1),
            max_cell_size_bytes=_int(environ, "AMP_MAX_CELL_SIZE_BYTES", 65536, 1),
            lifecycle_enabled=_bool(environ, "AMP_LIFECYCLE_ENABLED", True),
            lifecycle_interval_seconds=_int(environ, "AMP_LIFECYCLE_INTERVAL_SECONDS", 3600, 1),
            purge_retention=_bool(environ, "AMP_PURGE_RETENTION", False),
        )

    @property
    def api_keys_required(self) -> bool:
        return self.api_keys is not None

    @property
    def max_page_size(self) -> int:
        return MAX_PAGE_SIZE

    @property
    def retention_days(self) -> int:
        return RETENTION_DAYS

    @property
    def max_body_bytes(self) -> int:
        """Hard cap on a request body: no body this large can hold an acceptable cell."""
        return max(1 << 20, 8 * self.max_cell_size_bytes)
