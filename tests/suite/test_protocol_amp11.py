"""``amp-conformance --protocol amp-1.1`` end to end through the command (issue 15's bars): the self-test
over both channels passes and cites the catalogue widely; broken MCP servers end in one line, exit 2."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from amp_conformance.cli import main
from amp_conformance.engine.resources import load_contract

VERBS = ("ENC", "REC", "FGT", "STAT", "CONS", "PIN", "EXP", "IMP")


def test_the_amp11_self_test_passes_over_both_channels(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    assert main(["--protocol", "amp-1.1", "--json", str(report), "-q"]) == 0
    document = json.loads(report.read_text())
    jsonschema.Draft202012Validator(load_contract("report.schema.json")).validate(document)
    assert document["protocol"] == "amp-1.1"
    cited = {rid for rid in document["summary"]["requirements_cited"] if rid.startswith("AMP11-")}
    assert len(cited) >= 60, len(cited)
    assert all(any(rid.startswith(f"AMP11-{verb}-") for rid in cited) for verb in VERBS)
    assert set(document["server"]["channels"]) == {"mcp", "rest"}


MISBEHAVING = {
    "hangs": "import time; time.sleep(120)",
    "exits": "import sys; sys.exit(3)",
    "garbage": (
        "import sys, time; sys.stdout.write('this is not json-rpc\\n'); sys.stdout.flush(); time.sleep(120)"
    ),
}


@pytest.mark.parametrize("kind", sorted(MISBEHAVING))
def test_a_broken_mcp_server_ends_the_run_in_one_line(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    command = f'{sys.executable} -c "{MISBEHAVING[kind]}"'
    started = time.monotonic()
    code = main(["--protocol", "amp-1.1", "--mcp-command", command, "--timeout", "2"])
    elapsed = time.monotonic() - started
    captured = capsys.readouterr()
    assert code == 2
    assert elapsed < 2 * 2 + 10, elapsed
    assert "Traceback" not in captured.err + captured.out
    assert captured.err.count("amp-conformance:") == 1, captured.err
