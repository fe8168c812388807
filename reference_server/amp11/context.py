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


NOT_FOUND_FORMS = ("channel", "status", "error")
#: ``AMP11_REFERENCE_LEVEL``: ``full`` (every verb) or ``core`` (only encode, recall, forget and stats).
LEVELS = ("full", "core")


class ConfigError(ValueError):
    """A setting that cannot be used; the entry point reports it in one line."""


@dataclass(frozen=True)
class Settings:
    """``not_found``: how forget and pin report an unknown id (the sources disagree, conflict C1).
    ``channel``: each channel's own contract, in band over MCP (amp.json's ``status: not_found``) and
    404 over REST (the v1.1 OpenAPI file); ``status``: in band on both (200 over REST, as the v1.2-draft
    OpenAPI file says); ``error``: a ``not_found`` error on both (-32001 / 404, spec §3.5 read literally).
    ``draft``: also serve the v1.2-draft verbs (a Full server only). ``level``: ``full``, or ``core``
    to serve the four Core verbs alone and declare ``amp_conformance: "core"`` (a Core-only server)."""

    not_found: str = "channel"
    draft: bool = True
    level: str = "full"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        not_found = env.get("AMP11_REFERENCE_NOT_FOUND", "channel")
        if not_found not in NOT_FOUND_FORMS:
            raise ConfigError(
                f"AMP11_REFERENCE_NOT_FOUND must be one of {', '.join(NOT_FOUND_FORMS)}, not {not_found!r}"
            )
        draft = env.get("AMP11_REFERENCE_DRAFT", "1")
        if draft not in ("0", "1"):
            raise ConfigError(f"AMP11_REFERENCE_DRAFT must be 0 or 1, not {draft!r}")
        level = env.get("AMP11_REFERENCE_LEVEL", "full")
        if level not in LEVELS:
            raise ConfigError(f"AMP11_REFERENCE_LEVEL must be one of {', '.join(LEVELS)}, not {level!r}")
        return cls(not_found=not_found, draft=draft == "1", level=level)


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
