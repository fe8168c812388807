"""The in-memory AMP v0.1.0 reference server (Starlette + pydantic, served by uvicorn).

from reference_server import Settings, create_app, ManualClock
app = create_app(Settings.from_env(os.environ), clock=ManualClock())
"""

from __future__ import annotations

from reference_server.app import create_app
from reference_server.clock import Clock, ManualClock, SystemClock
from reference_server.config import ConfigError, Settings
from reference_server.faults import FAULTS, Fault, Faults
from reference_server.service import ServerState
from reference_server.store import RetentionWindowError

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
