"""Pytest plugin of the AMP v1.1 checks: the ``amp11`` fixture and the run-wide session behind it.

The target comes, in this order, from ``config.stash[TARGET_KEY]`` (set by the engine's plugin), an
:class:`Amp11Target` passed in ``pytest.main(plugins=[...])``, or this plugin's own options
(``--amp11-mcp-command``, ``--amp11-base-url``, ``--amp11-timeout``, ``--amp11-deadline``). Each check's
context is kept in ``item.stash[CONTEXT_KEY]`` so the engine can read its evidence; the run's session
(cleanup counts, server info, MCP stderr) in ``config.stash[SESSION_KEY]``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from amp_conformance.amp11.context import Amp11
from amp_conformance.amp11.session import Amp11Session, Amp11Target
from amp_conformance.engine.client import Client
from amp_conformance.engine.marking import MARK, check_info
from amp_conformance.engine.outcomes import ToolError, TransportFailure

TARGET_KEY = pytest.StashKey[Amp11Target]()
SESSION_KEY = pytest.StashKey[Amp11Session]()
CONTEXT_KEY = pytest.StashKey[Amp11]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("amp-conformance-1.1", "AMP v1.1 checks")
    group.addoption("--amp11-mcp-command", dest="amp11_mcp_command", help="MCP server command (stdio)")
    group.addoption("--amp11-base-url", dest="amp11_base_url", help="REST base URL of the AMP v1.1 server")
    group.addoption(
        "--amp11-timeout", dest="amp11_timeout", type=float, default=10.0, help="seconds per reply"
    )
    group.addoption(
        "--amp11-deadline", dest="amp11_deadline", type=float, default=60.0, help="seconds per check"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARK}(requirements, level, area): an AMP conformance check")


def target_of(config: pytest.Config) -> Amp11Target | None:
    """The run's AMP v1.1 target, or None when nothing was given."""
    found = config.stash.get(TARGET_KEY, None)
    if found is not None:
        return found
    for plugin in config.pluginmanager.get_plugins():
        if isinstance(plugin, Amp11Target):
            return plugin
    command = config.getoption("amp11_mcp_command", None)
    base_url = config.getoption("amp11_base_url", None)
    if not command and not base_url:
        return None
    target = Amp11Target(
        mcp_command=command,
        base_url=base_url,
        timeout=float(config.getoption("amp11_timeout", 10.0) or 10.0),
        deadline=float(config.getoption("amp11_deadline", 60.0) or 60.0),
    )
    config.stash[TARGET_KEY] = target
    return target


def session_for(config: pytest.Config) -> Amp11Session | None:
    """The run's session (created on first call and kept in ``config.stash[SESSION_KEY]``).

    The engine may call this (and :func:`preflight`) at session start; the checks then reuse the
    MCP process it started. The ``amp11_session`` fixture closes it at the end of the run."""
    existing = config.stash.get(SESSION_KEY, None)
    if existing is not None:
        return existing
    target = target_of(config)
    if target is None:
        return None
    session = Amp11Session(target)
    config.stash[SESSION_KEY] = session
    return session


def preflight(session: Amp11Session) -> str | None:
    """One line saying why no check can run (the MCP command is unusable, the REST URL unreachable),
    else None. Bounded: an MCP server that hangs costs one timeout, one that exits costs nothing."""
    target = session.target
    if target.mcp_command:
        try:
            session.mcp()
        except ToolError as exc:
            return f"the MCP server is unusable: {exc}"
    if target.base_url:
        client = Client(session.connection())
        try:
            client.get("/v1/memories/stats", params={"agent_id": session.unique("preflight")}, root=True)
        except TransportFailure as exc:
            if exc.unreachable:
                reason = exc.exchange.error if exc.exchange and exc.exchange.error else str(exc)
                return f"cannot reach {target.base_url}: {reason}"
        except ToolError as exc:
            return f"cannot reach {target.base_url}: {exc}"
    return None


@pytest.fixture(scope="session")
def amp11_session(request: pytest.FixtureRequest) -> Iterator[Amp11Session]:
    """The run-wide state: one MCP process, one REST connection, cleanup at the end."""
    session = session_for(request.config)
    if session is None:
        pytest.skip("an AMP v1.1 check: give an MCP server command and/or a REST base URL")
    try:
        yield session
    finally:
        try:
            session.cleanup()
        finally:
            session.close()


@pytest.fixture
def amp11(request: pytest.FixtureRequest, amp11_session: Amp11Session) -> Amp11:
    """The per-check API of the AMP v1.1 checks (see ``amp_conformance.amp11.context.Amp11``)."""
    info = check_info(request.node) if isinstance(request.node, pytest.Item) else None
    if info is None:
        pytest.skip("the amp11 fixture needs an @check mark")
    context = Amp11(amp11_session, info)
    request.node.stash[CONTEXT_KEY] = context
    return context
