"""AMP v1.1 (smriti-memcore) as the engine knows it: the protocol record the registry finds (``amp-1.1``).

Its target is an MCP server command (stdio) and/or a REST base URL; with neither it self-tests the
bundled reference server over both channels. One MCP process serves a whole run, so a run uses one
worker. A server error (a 5xx other than 501 that is not a reported ``backend_error``) breaks
AMP11-REST-11.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import httpx

from amp_conformance.engine.configuration import check_command
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.http import HttpProtocol
from amp_conformance.engine.options import OptionSpec, OptionValues, SuiteOptions

if TYPE_CHECKING:  # loaded when a run of this protocol opens its session: the registry loads every
    # protocol's record (to find an id's catalogue), and an AMP v0.1.0 worker needs none of this
    from amp_conformance.amp11.context import Amp11Context
    from amp_conformance.amp11.session import Amp11Session, Amp11Target
    from amp_conformance.engine.run import Run
    from amp_conformance.engine.spec import CheckSpec


def self_test_target(
    *, timeout: float = 10.0, deadline: float = 60.0, run_id: str | None = None
) -> Amp11Target:
    """The bundled reference server, both channels over one store: the MCP process the suite starts
    also serves REST on a free 127.0.0.1 port (``--mcp --rest-port PORT``)."""
    import socket
    import sys

    from amp_conformance.amp11.session import Amp11Target

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


@dataclass(frozen=True)
class Amp11Options:
    """The options only AMP v1.1 reads."""

    mcp_command: str | None = None
    """The MCP server command (stdio), or None: no MCP channel."""
    keep_cells: bool = False
    """Leave the memories the run stored in place (``--keep-cells``)."""

    def public_view(self) -> dict[str, Any]:
        return {"keep_cells": self.keep_cells}


class Amp11Protocol(HttpProtocol[Amp11Options, "Amp11Session", "Amp11Context"]):
    """AMP v1.1: eight verbs as MCP tools over stdio and as REST routes (the REST base URL is
    optional: an MCP-only run has none)."""

    name: ClassVar[str] = "amp-1.1"
    title: ClassVar[str] = "AMP v1.1"
    checks_package: ClassVar[str] = "amp_conformance.amp11.checks"
    catalogue_package: ClassVar[str] = "amp_conformance.amp11"
    server_error_requirement: ClassVar[str | None] = "AMP11-REST-11"
    self_test_in_plugin: ClassVar[bool] = True
    base_url_required: ClassVar[bool] = False
    label: ClassVar[str] = "AMP 1.1"
    claims: ClassVar[tuple[str, str] | None] = ("initialize", "server_info")
    options: ClassVar[tuple[OptionSpec, ...]] = (
        OptionSpec("mcp-command", "amp-1.1: the MCP server command (stdio); the suite starts and stops it"),
        OptionSpec(
            "keep-cells",
            "leave the memories the run stored in place (no cleanup)",
            {"action": "store_true", "default": False},
        ),
    )

    def parse_options(self, values: OptionValues) -> Amp11Options:
        command = values.text("mcp-command")
        if command is not None:  # (--server-cmd is checked by the server process, as early)
            check_command("--mcp-command", command)
        return Amp11Options(mcp_command=command, keep_cells=values.flag("keep-cells"))

    def is_self_test(self, values: OptionValues) -> bool:
        return super().is_self_test(values) and values.text("mcp-command") is None

    @contextlib.contextmanager
    def self_test(self, values: OptionValues) -> Iterator[str]:
        """The plugin starts the bundled server itself (both channels over one store)."""
        yield "no target given, checking the bundled AMP v1.1 reference server (MCP and REST)"

    def parallel_problem(self, options: SuiteOptions, *, in_process: bool) -> str | None:
        return f"{self.name} runs use one worker (its MCP channel is a single process): drop -n/--workers"

    def open_session(
        self, run: Run, *, http: httpx.Client | None, plugins: Sequence[object] = ()
    ) -> Amp11Session:
        from amp_conformance.amp11.session import Amp11Session, Amp11Target

        given = next((p for p in plugins if isinstance(p, Amp11Target)), None)
        options = run.options
        own = self.own_options(options)
        if given is not None:
            target = given
        elif not own.mcp_command and not options.base_url:
            target = self_test_target(timeout=options.timeout, deadline=options.deadline)
        else:
            target = Amp11Target(
                mcp_command=own.mcp_command,
                base_url=options.base_url,
                timeout=options.timeout,
                deadline=options.deadline,
            )
            target.http = http
        target.run_id = str(run.id).lower()
        target.cleanup = not own.keep_cells
        return Amp11Session(target, run)

    def context(self, session: Amp11Session, spec: CheckSpec) -> Amp11Context:
        from amp_conformance.amp11.context import Amp11Context

        return Amp11Context(session.run, spec, session)

    def server_errors(self, exchanges: Sequence[Exchange]) -> list[Exchange]:
        """HTTP 5xx answers other than 501 that are not a reported ``backend_error`` (§3.5 maps
        ``backend_error`` to 500 and ``not_supported`` to 501)."""
        return [e for e in exchanges if _server_error(e)]


def _server_error(exchange: Exchange) -> bool:
    status = exchange.status
    if status is None or status < 500 or status == 501 or exchange.url.startswith("mcp:"):
        return False
    try:
        body = json.loads(exchange.response_body)
    except ValueError:
        return True
    text = json.dumps(body)[:2000] if isinstance(body, dict) else ""
    return "backend_error" not in text


PROTOCOL = Amp11Protocol()
