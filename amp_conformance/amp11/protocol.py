"""AMP v1.1 (smriti-memcore) as the engine knows it: the protocol record the registry finds (``amp-1.1``).

Its target is an MCP server command (stdio) and/or a REST base URL; with neither it self-tests the
bundled reference server over both channels. One MCP process serves a whole run, so a run uses one
worker. A server error (a 5xx other than 501 that is not a reported ``backend_error``) breaks
AMP11-REST-11.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import httpx

from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.options import OptionSpec, SuiteOptions, UsageError
from amp_conformance.engine.protocol import Protocol

if TYPE_CHECKING:  # loaded when a run of this protocol opens its session: the registry loads every
    # protocol's record (to find an id's catalogue), and an AMP v0.1.0 worker needs none of this
    from amp_conformance.amp11.context import Amp11
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


class Amp11Protocol(Protocol):
    """AMP v1.1: eight verbs as MCP tools over stdio and as REST routes."""

    name: ClassVar[str] = "amp-1.1"
    title: ClassVar[str] = "AMP v1.1"
    checks_package: ClassVar[str] = "amp_conformance.amp11.checks"
    catalogue_package: ClassVar[str] = "amp_conformance.amp11"
    server_error_requirement: ClassVar[str | None] = "AMP11-REST-11"
    self_test_in_plugin: ClassVar[bool] = True
    label: ClassVar[str] = "AMP 1.1"
    claims: ClassVar[tuple[str, str] | None] = ("initialize", "server_info")
    options: ClassVar[tuple[OptionSpec, ...]] = (
        OptionSpec("mcp-command", "amp-1.1: the MCP server command (stdio); the suite starts and stops it"),
    )

    def parse_options(self, values: Mapping[str, Any]) -> str | None:
        command = values.get("amp_mcp_command")
        return str(command) if command else None

    def is_self_test(self, values: Mapping[str, Any]) -> bool:
        return not values.get("amp_base_url") and not values.get("amp_mcp_command")

    @contextlib.contextmanager
    def self_test(self, values: dict[str, Any]) -> Iterator[str]:
        """The plugin starts the bundled server itself (both channels over one store)."""
        yield "no target given, checking the bundled AMP v1.1 reference server (MCP and REST)"

    def validate(self, options: SuiteOptions) -> None:
        if options.base_url:
            url = httpx.URL(options.base_url)
            if url.scheme not in ("http", "https") or not url.host:
                raise UsageError(f"not an http(s) URL: {options.base_url!r}")

    def parallel_problem(self, options: SuiteOptions, *, in_process: bool) -> str | None:
        return f"{self.name} runs use one worker (its MCP channel is a single process): drop -n/--workers"

    def open_session(
        self, run: Run, *, http: httpx.Client | None, plugins: Sequence[object] = ()
    ) -> Amp11Session:
        from amp_conformance.amp11.session import Amp11Session, Amp11Target

        given = next((p for p in plugins if isinstance(p, Amp11Target)), None)
        options = run.options
        if given is not None:
            target = given
        elif not options.protocol_options and not options.base_url:
            target = self_test_target(timeout=options.timeout, deadline=options.deadline)
        else:
            target = Amp11Target(
                mcp_command=options.protocol_options,
                base_url=options.base_url,
                timeout=options.timeout,
                deadline=options.deadline,
            )
            target.http = http
        target.run_id = str(run.id).lower()
        target.cleanup = not options.keep_cells
        return Amp11Session(target, run)

    def context(self, session: Amp11Session, spec: CheckSpec) -> Amp11:
        from amp_conformance.amp11.context import Amp11

        return Amp11(session.run, spec, session)

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
