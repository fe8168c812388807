"""What the engine (plugin, command, reports) needs from the AMP v1.1 package, in one place.

The engine stays protocol-neutral: for ``--protocol amp-1.1`` it runs the checks in :data:`CHECKS_DIR`,
hands the target over with :func:`configure`, stops early on :func:`start`'s one-line reason, reads each
check's evidence with :func:`evidence_of`, and puts :func:`finish`'s blocks into the report.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from amp_conformance.amp11.fixtures import CONTEXT_KEY, SESSION_KEY, TARGET_KEY, preflight, session_for
from amp_conformance.amp11.session import Amp11Target
from amp_conformance.engine.outcomes import Evidence

CHECKS_DIR = Path(__file__).resolve().parent / "checks"


def self_test_target(
    *, timeout: float = 10.0, deadline: float = 60.0, run_id: str | None = None
) -> Amp11Target:
    """The bundled reference server, both channels over one store: the MCP process the suite starts
    also serves REST on a free 127.0.0.1 port (``--mcp --rest-port PORT``)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    command = [sys.executable, "-m", "reference_server.amp11", "--mcp", "--rest-port", str(port)]
    target = Amp11Target(
        mcp_command=command, base_url=f"http://127.0.0.1:{port}", timeout=timeout, deadline=deadline
    )
    if run_id:
        target.run_id = run_id
    return target


def configure(
    config: pytest.Config,
    *,
    mcp_command: str | None,
    base_url: str | None,
    timeout: float,
    deadline: float,
    run_id: str | None = None,
    http: httpx.Client | None = None,
    env: dict[str, str] | None = None,
    keep: bool = False,
) -> Amp11Target:
    """Give the checks their target (self-test when neither channel is given).

    ``env`` is the MCP server process's whole environment (None: inherit); ``keep`` skips the
    end-of-run forgetting of what the checks stored; ``http`` sends REST through that client."""
    if not mcp_command and not base_url:
        target = self_test_target(timeout=timeout, deadline=deadline, run_id=run_id)
    else:
        target = Amp11Target(mcp_command=mcp_command, base_url=base_url, timeout=timeout, deadline=deadline)
        if run_id:
            target.run_id = run_id
        target.http = http
    if env is not None:
        target.env = dict(env)
    target.cleanup = not keep
    config.stash[TARGET_KEY] = target
    return target


def start(config: pytest.Config) -> str | None:
    """At session start: one line saying why no check can run (exit 2), else None.

    Starts the MCP process and initialises it (the checks reuse that session); bounded by one
    timeout for a server that hangs."""
    session = session_for(config)
    if session is None:
        return "give --mcp-command and/or --base-url for --protocol amp-1.1"
    return preflight(session)


def evidence_of(item: pytest.Item) -> Evidence | None:
    """A check's evidence (exchanges, with MCP frames; warnings; notes), or None before its fixture ran."""
    context = item.stash.get(CONTEXT_KEY, None)
    return context.evidence if context is not None else None


def finish(config: pytest.Config) -> dict[str, Any]:
    """The report's blocks about the run's targets: ``{"server": {...}, "cleanup": {...}}``.

    Call after the last check (``pytest_sessionfinish``). Also stops the MCP process when no check
    ever used the session (everything deselected): cleanup and close are idempotent."""
    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        return {"server": {}, "cleanup": {"attempted": 0, "deleted": 0, "problems": []}}
    try:
        session.cleanup()
    finally:
        session.close()
    return {"server": session.report_info(), "cleanup": session.cleanup_info()}
