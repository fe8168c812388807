"""Issue 22 §1: decay arithmetic is judged where the documented unit (fractional days) and a wrong one
(hours, whole days) disagree, and stays exact behind a slow network.

The decay check alone (with the shared passes it needs) runs against the bundled reference server
holding every response back 200 ms: the correct server passes, and each unit fault fails AMP-LC-01
and nothing else. (The fault sweep shows the same without the delay, in a whole run.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from amp_conformance.amp01.selfserve import BundledServer

CHECK = "test_fast_decay_goes_stale_and_a_read_brings_it_back"


def _run(fault: str | None, report: Path) -> dict[str, object]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AMP_")}
    environ["AMP_LIFECYCLE_ENABLED"] = "false"
    if fault:
        environ["AMP_REFERENCE_FAULTS"] = fault
    with BundledServer(environ, keys=True, delay=0.2) as server:
        command = [sys.executable, "-m", "amp_conformance", "--base-url", server.url]
        command += [f"--api-key={agent}={key}" for agent, key in server.api_keys.items()]
        command += [f"--admin-token={server.admin_token}", "--allow-global-effects", "--no-fuzz"]
        command += ["-k", CHECK, "--json", str(report), "-q"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    checks = json.loads(report.read_text())["checks"]
    (found,) = [c for c in checks if c["name"] == CHECK]
    return {"exit": done.returncode, **found}


@pytest.mark.slow
@pytest.mark.parametrize("fault", [None, "decay-in-hours", "decay-whole-days"])
def test_the_decay_check_tells_the_units_apart_behind_200_ms(fault: str | None, tmp_path: Path) -> None:
    found = _run(fault, tmp_path / "report.json")
    if fault is None:
        assert (found["exit"], found["outcome"]) == (0, "pass"), found
        return
    assert (found["exit"], found["outcome"]) == (1, "fail"), found
    assert found["finding_requirements"] == ["AMP-LC-01"], found
