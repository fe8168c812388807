"""The engine's entry points into the AMP v1.1 package: configure, start, evidence, finish."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.amp11 import hooks
from amp_conformance.amp11.fixtures import SESSION_KEY
from amp_conformance.engine.marking import check_info

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


class EngineStandIn:
    """What the engine's plugin does for --protocol amp-1.1, reduced to the hook calls."""

    def __init__(self, **target: Any) -> None:
        self.target = target
        self.reason: str | None = None
        self.evidence: dict[str, int] = {}
        self.blocks: dict[str, Any] = {}
        self.pid: int | None = None

    def pytest_configure(self, config: pytest.Config) -> None:
        hooks.configure(config, timeout=5.0, deadline=60.0, run_id="hooktest", **self.target)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.reason = hooks.start(session.config)
        stashed = session.config.stash.get(SESSION_KEY, None)
        if stashed is not None and stashed._mcp is not None:
            self.pid = stashed._mcp.pid

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        evidence = hooks.evidence_of(item)
        if report.when == "call" and evidence is not None and check_info(item) is not None:
            self.evidence[item.name] = len(evidence.exchanges)
        return report

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.blocks = hooks.finish(session.config)


def _run(stand_in: EngineStandIn, *selection: str) -> int:
    args = [str(hooks.CHECKS_DIR), "-q", "-p", "no:cacheprovider", "--assert=plain"]
    args += ["--rootdir", str(hooks.CHECKS_DIR), "-k", " or ".join(selection)]
    previous = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        return int(pytest.main(args, plugins=[stand_in]))
    finally:
        if previous is None:
            del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = previous


def test_self_test_runs_both_channels_and_reports_the_targets() -> None:
    stand_in = EngineStandIn(mcp_command=None, base_url=None)
    code = _run(stand_in, "test_cross", "test_amp_version_is_declared")
    assert code == 0 and stand_in.reason is None
    assert stand_in.evidence and all(count > 0 for count in stand_in.evidence.values())
    server, cleanup = stand_in.blocks["server"], stand_in.blocks["cleanup"]
    assert server["channels"] == ["mcp", "rest"]
    assert server["server_info"]["amp_conformance"] == "full"
    assert server["base_url"].startswith("http://127.0.0.1:")
    assert cleanup["deleted"] > 0 and cleanup["attempted"] == cleanup["deleted"]
    _assert_gone(stand_in.pid)


def test_start_names_an_unusable_server_in_one_line() -> None:
    stand_in = EngineStandIn(mcp_command="python3 -c 'import sys; sys.exit(5)'", base_url=None)
    _run(stand_in, "test_amp_version_is_declared")
    assert stand_in.reason is not None and "exited (code 5)" in stand_in.reason


def test_finish_stops_a_process_no_check_used() -> None:
    stand_in = EngineStandIn(mcp_command=None, base_url=None)
    _run(stand_in, "no_check_has_this_name")
    assert stand_in.reason is None and stand_in.pid is not None
    _assert_gone(stand_in.pid)


def _assert_gone(pid: int | None) -> None:
    assert pid is not None
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        status = Path(f"/proc/{pid}/status")
        if status.exists() and "State:\tZ" in status.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"the MCP server process {pid} is still running")
