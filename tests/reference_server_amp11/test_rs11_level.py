"""AMP11_REFERENCE_LEVEL=core: a Core-only server (the four Core verbs, declared ``core``)."""

from __future__ import annotations

import pytest

from reference_server.amp11 import Settings
from reference_server.amp11.context import ConfigError
from tests.reference_server_amp11.conftest import ServerFactory
from tests.reference_server_amp11.helpers import encode

A = {"agent_id": "agent-a"}
CORE = ["amp.encode", "amp.recall", "amp.forget", "amp.stats"]


def test_level_comes_from_the_environment() -> None:
    assert Settings.from_env({}).level == "full"
    assert Settings.from_env({"AMP11_REFERENCE_LEVEL": "core"}).level == "core"
    with pytest.raises(ConfigError):
        Settings.from_env({"AMP11_REFERENCE_LEVEL": "partial"})


def test_a_core_server_declares_core_and_serves_only_core_verbs(make_server: ServerFactory) -> None:
    server = make_server(settings=Settings(level="core"))
    info = server.mcp.request("initialize", {"protocolVersion": "2025-03-26"})["result"]["serverInfo"]
    assert info["amp_conformance"] == "core"
    names = [tool["name"] for tool in server.mcp.request("tools/list")["result"]["tools"]]
    assert sorted(names) == sorted(CORE)
    for channel in (server.mcp, server.rest):
        memory = encode(channel, A, "core still stores")
        assert channel.call("amp.forget", {"scope": A, "id": memory}).get() == {"status": "forgotten"}
        refused = channel.call("amp.pin", {"scope": A, "id": memory})
        assert not refused.ok and refused.error == "not_supported"


def test_a_full_server_still_declares_full(make_server: ServerFactory) -> None:
    server = make_server()
    info = server.mcp.request("initialize", {"protocolVersion": "2025-03-26"})["result"]["serverInfo"]
    assert info["amp_conformance"] == "full"
