"""Fixtures: an in-process AMP v1.1 reference server (one store, both channels), and each channel."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from reference_server.amp11 import Settings
from tests.reference_server_amp11.helpers import McpChannel, RestChannel, Server, make_server_now

ServerFactory = Callable[..., Server]


@pytest.fixture
def make_server() -> Iterator[ServerFactory]:
    opened: list[Server] = []

    def make(faults: str = "", settings: Settings | None = None) -> Server:
        server = make_server_now(faults, settings)
        opened.append(server)
        return server

    yield make
    for server in opened:
        server.rest.close()


@pytest.fixture
def server(make_server: ServerFactory) -> Server:
    return make_server()


@pytest.fixture(params=["mcp", "rest"])
def channel(request: pytest.FixtureRequest, server: Server) -> McpChannel | RestChannel:
    return server.channel(request.param)
