"""Each named fault of the AMP v1.1 reference server is caught by a check citing the fault's requirement.

Faults of the MCP adapter run over MCP (a server process each), faults of the REST app over REST, the
split-store fault over both channels, and every other (backend) fault over REST, which is the faster
channel here; only the checks citing the fault's requirement run.
"""

from __future__ import annotations

import pytest

from reference_server.amp11 import FAULTS
from tests.amp11.harness import Collector, both_channels, mcp_target, rest_target, run_checks

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")]

MCP_FAULTS = {
    "annotations-missing",
    "error-data-missing",
    "forget-not-destructive",
    "invalid-input-crashes-mcp",
    "invalid-request-wrong-rpc-code",
    "notification-answered",
    "response-id-stringified",
    "serverinfo-no-amp-version",
    "unknown-method-wrong-code",
}
BOTH_FAULTS = {"channels-separate-stores"}


def _run(name: str, requirement: str) -> Collector:
    wanted = frozenset({requirement})
    if name in MCP_FAULTS:
        return run_checks(mcp_target(name), requirements=wanted)
    if name in BOTH_FAULTS:
        with both_channels(name) as target:
            return run_checks(target, requirements=wanted)
    with rest_target(name) as target:
        return run_checks(target, requirements=wanted)


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_is_caught_by_a_check_citing_its_requirement(name: str) -> None:
    requirement = FAULTS[name].requirement
    collector = _run(name, requirement)
    assert collector.results, f"no check cites {requirement}"
    caught = [o for o in collector.results.values() if o.outcome == "failed"]
    shown = {o.name: (o.outcome, o.message[:200]) for o in collector.results.values()}
    assert caught, f"fault {name} ({requirement}) was not caught: {shown}"
    errors = [o for o in collector.results.values() if o.outcome == "error"]
    assert not errors, f"fault {name} made checks error instead of fail: {shown}"
