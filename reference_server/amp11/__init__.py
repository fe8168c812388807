"""The bundled in-memory AMP v1.1 reference server (smriti-memcore's protocol): Full level, both channels.

One ``Store`` can be served over MCP stdio (``serve_mcp``) and REST (``create_rest_app``) at once; see
``python -m reference_server.amp11 --help`` and ``--list-faults``.

    store = Store()
    app = create_rest_app(store, Faults.parse("recall-scope-leak"))   # Starlette app, in-process tests
    serve_mcp(Backend(store), stdin, stdout)                          # the MCP loop over text streams
"""

from __future__ import annotations

from reference_server.amp11.backend import Backend
from reference_server.amp11.context import AMP_VERSION, ConfigError, Settings
from reference_server.amp11.errors import AmpError
from reference_server.amp11.faults import FAULTS, MISBEHAVIOURS, Fault, Faults
from reference_server.amp11.mcp import McpSession, serve_mcp
from reference_server.amp11.rest import create_rest_app
from reference_server.amp11.store import Store

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
