"""The in-memory AMP v0.1.0 reference server (Starlette + pydantic, served by uvicorn).

Typical use: ``create_app(Settings.from_env(os.environ), clock=ManualClock())``; the app's
``state.amp`` is the ``ServerState`` (store, lifecycle engine, clock, settings).

The names below are loaded on first use, so ``python -m reference_server.auth`` does not import the
whole server (and its own module) before running.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reference_server.app import create_app
    from reference_server.clock import Clock, ManualClock, SystemClock
    from reference_server.config import ConfigError, Settings
    from reference_server.faults import FAULTS, Fault, Faults
    from reference_server.service import ServerState
    from reference_server.store import RetentionWindowError

_EXPORTS = {
    "FAULTS": "reference_server.faults",
    "Clock": "reference_server.clock",
    "ConfigError": "reference_server.config",
    "Fault": "reference_server.faults",
    "Faults": "reference_server.faults",
    "ManualClock": "reference_server.clock",
    "RetentionWindowError": "reference_server.store",
    "ServerState": "reference_server.service",
    "Settings": "reference_server.config",
    "SystemClock": "reference_server.clock",
    "create_app": "reference_server.app",
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
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reference_server' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
