"""Evidence that reproduces: every failing check's curl line in the JSON report of a fault sweep, replayed
with the real ``curl`` binary (secrets exported as their variables) right after the run against the
same live reference server, gets the status the report recorded.

The sweep is a subset that covers every route family (create, read, patch, delete, search, admin,
auth), keys mode, a body rebuilt by a generator (the size limit, ``"a" * N``) and a body that is not
UTF-8. The run keeps its cells (``--keep-cells``) so that the requests still name existing cells.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.amp01.selfserve import BundledServer
from amp_conformance.cli import run_suite
from amp_conformance.engine.replay import SecretRegistry, curl_variables
from reference_server import FAULTS

#: Case -> (fault, server in keys mode?, the areas to run).
SWEEP: dict[str, tuple[str, bool, str]] = {
    "create-returns-200": ("create-returns-200", False, "cre"),
    "create-returns-200-keys": ("create-returns-200", True, "cre"),
    "unknown-id-500": ("unknown-id-500", False, "read,patch,del"),
    "patch-mutable-owner": ("patch-mutable-owner", False, "patch"),
    "transition-wrong-code": ("transition-wrong-code", False, "del,patch"),
    "search-ignores-owner": ("search-ignores-owner", False, "srch"),
    "admin-token-ignored": ("admin-token-ignored", False, "admin"),
    "missing-agent-id-accepted": ("missing-agent-id-accepted", False, "auth,err"),
    "keys-distinct-errors": ("keys-distinct-errors", True, "auth"),
    "size-not-enforced": ("size-not-enforced", False, "size"),
    "bytes-non-utf8-500": ("bytes-non-utf8-500", False, "bytes"),
}

#: Case -> a fragment some replayed line must hold (the sweep really covers generators and secrets).
SHOWS = {
    "size-not-enforced": "python3 -c ",
    "bytes-non-utf8-500": "python3 -c ",
    "create-returns-200-keys": '"${AMP_API_KEY_AMP_SELFTEST_AGENT_',
    "admin-token-ignored": '"${AMP_ADMIN_TOKEN}"',
}

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl binary")


def _recorded_status(check: dict[str, Any]) -> int | None:
    """The status of the exchange the check's curl line replays: the last one sending that line (a
    check that repeats a request, such as a second DELETE, fails on the repeat)."""
    for exchange in reversed(check.get("exchanges") or []):
        if exchange.get("curl") == check.get("curl"):
            status = exchange.get("status")
            return status if isinstance(status, int) else None
    return None


def _replay(line: str, environment: dict[str, str]) -> int:
    command = f"{line} -o /dev/null -w '%{{http_code}}'"
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=environment, timeout=30, check=False
    )
    assert done.returncode == 0, (line[:300], done.stderr)
    return int(done.stdout.strip()[-3:])


def test_the_sweep_covers_real_faults() -> None:
    assert {fault for fault, _, _ in SWEEP.values()} <= set(FAULTS)


@pytest.mark.parametrize("case", sorted(SWEEP))
def test_every_failing_checks_curl_line_reproduces_its_status(case: str, tmp_path: Path) -> None:
    fault, keys, areas = SWEEP[case]
    environ = {"AMP_REFERENCE_FAULTS": fault, "AMP_LIFECYCLE_ENABLED": "false"}
    report_path = tmp_path / "report.json"
    with BundledServer(environ, keys=keys) as server:
        values: dict[str, Any] = {
            "amp_base_url": server.url,
            "amp_only": areas,
            "amp_no_fuzz": True,
            "amp_admin_token": server.admin_token,
            "amp_allow_global_effects": True,
            "amp_json": str(report_path),
            "amp_keep_cells": True,
            "amp_timeout": 10.0,
        }
        if keys:
            values["amp_api_key"] = [f"{agent}={key}" for agent, key in server.api_keys.items()]
        outcome = run_suite(values, quiet=True)
        assert outcome.exit_code == 1, f"{fault}: the run did not fail"
        report = json.loads(report_path.read_text(encoding="utf-8"))
        secrets = SecretRegistry.for_run(server.admin_token, server.api_keys)
        environment = {**os.environ, **secrets.environment()}
        text = report_path.read_text(encoding="utf-8")
        assert all(value not in text for value in secrets.environment().values())
        failing = [c for c in report["checks"] if c.get("outcome") == "fail"]
        assert failing
        replayed = []
        lines: list[str] = []
        for check in failing:
            line = check.get("curl")
            assert isinstance(line, str) and line, check.get("name")
            assert set(curl_variables(line)) <= set(secrets.variables())
            recorded = _recorded_status(check)
            assert recorded is not None, (check.get("name"), line[:200])
            replayed.append((check.get("name"), recorded, _replay(line, environment)))
            lines.append(line)
    if case in SHOWS:
        assert any(SHOWS[case] in line for line in lines), lines
    mismatched = [entry for entry in replayed if entry[1] != entry[2]]
    assert mismatched == [], f"{fault}: (check, recorded, replayed): {mismatched}"
