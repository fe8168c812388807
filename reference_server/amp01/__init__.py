"""The in-memory AMP v0.1.0 reference server (Starlette + pydantic, served by uvicorn).

Typical use: ``create_app(Settings.from_env(os.environ), clock=ManualClock())``; the app's
``state.amp`` is the ``ServerState`` (store, lifecycle engine, clock, settings).

The names below are loaded on first use, so ``python -m reference_server.amp01.auth`` does not import the
whole server (and its own module) before running.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reference_server.amp01.app import create_app, default_app
    from reference_server.amp01.clock import Clock, ManualClock, SystemClock
    from reference_server.amp01.config import Settings
    from reference_server.amp01.config_error import ConfigError
    from reference_server.amp01.faults import FAULTS, Fault, Faults
    from reference_server.amp01.service import ServerState
    from reference_server.amp01.store import RetentionWindowError

_EXPORTS = {
    "FAULTS": "reference_server.amp01.faults",
    "Clock": "reference_server.amp01.clock",
    "ConfigError": "reference_server.amp01.config_error",
    "Fault": "reference_server.amp01.faults",
    "Faults": "reference_server.amp01.faults",
    "ManualClock": "reference_server.amp01.clock",
    "RetentionWindowError": "reference_server.amp01.store",
    "ServerState": "reference_server.amp01.service",
    "Settings": "reference_server.amp01.config",
    "SystemClock": "reference_server.amp01.clock",
    "create_app": "reference_server.amp01.app",
    "default_app": "reference_server.amp01.app",
}

__all__ = [
    "FAULTS",
    "Clock",
    "ConfigError",
    "Fault",
    "Faults",
    "ManualClock",
    "RetentionWindowError",
    "ServerState",
    "Settings",
    "SystemClock",
    "create_app",
    "default_app",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reference_server.amp01' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
