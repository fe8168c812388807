"""An interrupted run (Ctrl-C, a cancelled CI job) is never reported as a pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amp_conformance.cli import run_suite
from amp_conformance.engine.inprocess import asgi_client
from reference_server import Settings, create_app
from tests.ci.helpers import validate


class InterruptAfter:
    """Interrupts the session as Ctrl-C would, before the check after ``count`` checks."""

    def __init__(self, count: int):
        self.count = count

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.count -= 1
        if self.count < 0:
            raise KeyboardInterrupt


def test_an_interrupted_run_is_incomplete_in_every_output(tmp_path: Path) -> None:
    paths = {name: tmp_path / name for name in ("r.json", "s.md", "b.json")}
    values = {
        "amp_base_url": "http://testserver",
        "amp_only": "read,list",
        "amp_no_fuzz": True,
        "amp_json": str(paths["r.json"]),
        "amp_markdown": str(paths["s.md"]),
        "amp_badge": str(paths["b.json"]),
    }
    app = create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false"}))
    with asgi_client(app, "http://testserver") as http:
        outcome = run_suite(values, http=http, quiet=True, plugins=[InterruptAfter(3)])
    assert outcome.exit_code == 2
    report = json.loads(paths["r.json"].read_text())
    validate(report, "report.schema.json")
    assert report["summary"]["outcomes"]["pass"] == 3 and report["summary"]["verdict"] == "incomplete"
    assert paths["s.md"].read_text().startswith("## AMP v0.1.0 conformance: INCOMPLETE")
    assert json.loads(paths["b.json"].read_text())["color"] == "orange"
