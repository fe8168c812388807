"""An MCP server that hangs, exits at once, or writes garbage ends the run quickly and clearly.

Both tiny fake servers (python -c) and the reference server's process misbehaviours are used; the
bar is 2 x the timeout + 10 s, a one-line reason, and checks that end in *error* (never *failed*).
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from amp_conformance.amp11.session import Amp11Session, Amp11Target
from tests.amp11.harness import MCP_SERVER, run_checks

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

TIMEOUT = 1.0
BOUND = 2 * TIMEOUT + 10
FAKES = {
    "hangs": [sys.executable, "-c", "import time; time.sleep(600)"],
    "exits": [sys.executable, "-c", "import sys; sys.exit(3)"],
    "crashes": [sys.executable, "-c", "raise SystemExit(undefined_name)"],
    "garbage": [
        sys.executable,
        "-c",
        "import time; print('<html>not json</html>', flush=True); time.sleep(600)",
    ],
}
MISBEHAVIOURS = ("mcp-hang", "mcp-exit", "mcp-garbage")


def _target(command: list[str], fault: str = "") -> Amp11Target:
    env = {**os.environ, "AMP11_REFERENCE_FAULTS": fault}
    return Amp11Target(mcp_command=command, timeout=TIMEOUT, deadline=30.0, env=env)


def _cases() -> list[tuple[str, list[str], str]]:
    cases = [(name, command, "") for name, command in FAKES.items()]
    cases += [(fault, list(MCP_SERVER), fault) for fault in MISBEHAVIOURS]
    return cases


@pytest.mark.parametrize(("name", "command", "fault"), _cases(), ids=[c[0] for c in _cases()])
def test_preflight_gives_one_line_in_time(name: str, command: list[str], fault: str) -> None:
    session = Amp11Session(_target(command, fault))
    started = time.monotonic()
    try:
        reason = session.preflight()
    finally:
        session.close()
    elapsed = time.monotonic() - started
    assert reason is not None and reason.startswith("the MCP server is unusable"), reason
    assert "\n" not in reason  # one line, the server's own stderr included
    assert "Traceback" not in reason.split("; stderr:")[0]  # nothing of ours
    assert elapsed < BOUND, elapsed


@pytest.mark.parametrize("name", sorted(FAKES))
def test_an_unusable_server_stops_the_run_before_any_check_never_a_failure(name: str) -> None:
    """The engine's preflight starts the MCP process: one that hangs, exits or babbles ends the run
    with its one-line reason (exit 2) before any check, so no check can fail on it."""
    started = time.monotonic()
    collector = run_checks(_target(FAKES[name]), "test_session or test_tools or test_scope")
    elapsed = time.monotonic() - started
    assert not [o for o in collector.results.values() if o.outcome == "failed"]
    assert collector.run is not None
    reason = collector.run.preflight_problem
    assert reason is not None and "unusable" in reason, reason
    assert elapsed < BOUND + 10, elapsed  # + pytest's own start-up for the nested run
