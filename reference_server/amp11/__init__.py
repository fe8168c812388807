"""The bundled in-memory AMP v1.1 reference server (smriti-memcore's protocol): Full level, both channels.

One ``Store`` can be served over MCP stdio (``serve_mcp``) and REST (``create_rest_app``) at once; see
``python -m reference_server.amp11 --help`` and ``--list-faults``.

    store = Store()
    app = create_rest_app(store, Faults.parse("recall-scope-leak"))   # Starlette app, in-process tests
    serve_mcp(Backend(store), stdin, stdout)                          # the MCP loop over text streams

The names are loaded on first use, so the MCP entry point starts without importing the REST stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reference_server.amp11.backend import Backend
    from reference_server.amp11.context import AMP_VERSION, ConfigError, Settings
    from reference_server.amp11.errors import AmpError
    from reference_server.amp11.faults import FAULTS, MISBEHAVIOURS, Fault, Faults
    from reference_server.amp11.mcp import McpSession, serve_mcp
    from reference_server.amp11.rest import create_rest_app
    from reference_server.amp11.store import Store

_EXPORTS = {
    "AMP_VERSION": "reference_server.amp11.context",
    "FAULTS": "reference_server.amp11.faults",
    "MISBEHAVIOURS": "reference_server.amp11.faults",
    "AmpError": "reference_server.amp11.errors",
    "Backend": "reference_server.amp11.backend",
    "ConfigError": "reference_server.amp11.context",
    "Fault": "reference_server.amp11.faults",
    "Faults": "reference_server.amp11.faults",
    "McpSession": "reference_server.amp11.mcp",
    "Settings": "reference_server.amp11.context",
    "Store": "reference_server.amp11.store",
    "create_rest_app": "reference_server.amp11.rest",
    "serve_mcp": "reference_server.amp11.mcp",
}

__all__ = [
    "AMP_VERSION",
    "FAULTS",
    "MISBEHAVIOURS",
    "AmpError",
    "Backend",
    "ConfigError",
    "Fault",
    "Faults",
    "McpSession",
    "Settings",
    "Store",
    "create_rest_app",
    "serve_mcp",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'reference_server.amp11' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
