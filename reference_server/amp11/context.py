"""What every verb runs against: the shared store, the faults switched on, and the server's settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_server.amp11.errors import AmpError
from reference_server.amp11.faults import ENV_VAR, NO_FAULTS, Faults
from reference_server.amp11.scope import Scope, matches, resolve_scope
from reference_server.amp11.store import Store

AMP_VERSION = "1.1"
SERVER_NAME = "amp11-reference-server"
SERVER_VERSION = "0.1.0"


class ConfigError(ValueError):
    """A setting that cannot be used; the entry point reports it in one line."""


@dataclass(frozen=True)
class Settings:
    """``not_found``: how forget/pin/update report an unknown id. ``status`` (the OpenAPI contract and the
    upstream MCP suite: a result with ``status: not_found``, HTTP 200) or ``error`` (spec §3.5 read
    literally: ``not_found`` as JSON-RPC -32001 / HTTP 404). ``draft``: also serve the v1.2-draft verbs."""

    not_found: str = "status"
    draft: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        not_found = env.get("AMP11_REFERENCE_NOT_FOUND", "status")
        if not_found not in ("status", "error"):
            raise ConfigError(f"AMP11_REFERENCE_NOT_FOUND must be 'status' or 'error', not {not_found!r}")
        draft = env.get("AMP11_REFERENCE_DRAFT", "1")
        if draft not in ("0", "1"):
            raise ConfigError(f"AMP11_REFERENCE_DRAFT must be 0 or 1, not {draft!r}")
        return cls(not_found=not_found, draft=draft == "1")


def faults_from_env(env: Mapping[str, str]) -> Faults:
    try:
        return Faults.parse(env.get(ENV_VAR))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


@dataclass
class Context:
    store: Store
    faults: Faults = NO_FAULTS
    settings: Settings = field(default_factory=Settings)

    def on(self, fault: str) -> bool:
        return self.faults.on(fault)

    def scope(self, args: Mapping[str, Any]) -> Scope:
        """The request scope, validated (``invalid_request`` when it is missing or not isolating)."""
        return resolve_scope(
            args,
            require_isolating=not self.on("refining-only-scope-accepted"),
            allow_flat=not self.on("flat-agent-id-refused"),
        )

    def match(self, stored: Mapping[str, str], requested: Mapping[str, str]) -> bool:
        return matches(stored, requested, strict=not self.on("scope-not-strict-and"))

    def not_found(self, memory_id: str) -> dict[str, Any]:
        """The outcome of a point verb whose id is not in the scope, per the ``not_found`` setting."""
        if self.settings.not_found == "error":
            raise AmpError("not_found", f"no memory {memory_id!r} in this scope")
        return {"status": "not_found"}
