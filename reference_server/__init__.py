"""The bundled reference servers, one package per protocol: ``amp01`` (AMP v0.1.0) and ``amp11`` (AMP v1.1).

The names below are the AMP v0.1.0 server's (``reference_server.amp01``), re-exported for brevity and
loaded on first use, so ``python -m reference_server.amp01.auth`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reference_server.amp01 import (
        FAULTS,
        Clock,
        ConfigError,
        Fault,
        Faults,
        ManualClock,
        RetentionWindowError,
        ServerState,
        Settings,
        SystemClock,
        create_app,
        default_app,
    )

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
    if name not in __all__:
        raise AttributeError(f"module 'reference_server' has no attribute {name!r}")
    value = getattr(importlib.import_module("reference_server.amp01"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
