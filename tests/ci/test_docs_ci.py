"""The CI examples in docs/ci.md run: their suite command is extracted and run against the reference
server (with a fault the example's expectations file lists), so the examples cannot rot."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.ci.helpers import REPO, command_env, marked_processes, new_marker, read_json, validate

DOC = REPO / "docs" / "ci.md"
FAILING_CHECK = "test_list.py::test_limit_bounds_are_enforced_not_clamped"


def _yaml_blocks() -> list[Any]:
    yaml = pytest.importorskip("yaml")
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    return [yaml.safe_load(block) for block in blocks]


def _github_step() -> dict[str, Any]:
    workflow = _yaml_blocks()[0]
    steps = workflow["jobs"]["amp-conformance"]["steps"]
    step: dict[str, Any] = next(s for s in steps if "amp-conformance" in str(s.get("run", "")).split()[:1])
    return step


def _gitlab_command() -> str:
    job = _yaml_blocks()[1]["amp-conformance"]
    command: str = next(line for line in job["script"] if line.startswith("amp-conformance"))
    return command


def _words(shell: str) -> str:
    return " ".join(shell.replace("\\\n", " ").split())


def test_the_readme_links_the_ci_page() -> None:
    assert "docs/ci.md" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_gitlab_job_runs_the_same_command_as_the_workflow() -> None:
    assert _words(_gitlab_command()) == _words(_github_step()["run"])


def test_the_workflow_keeps_json_junit_and_markdown_as_artifacts() -> None:
    workflow = _yaml_blocks()[0]
    upload = next(
        s for s in workflow["jobs"]["amp-conformance"]["steps"] if "upload-artifact" in s.get("uses", "")
    )
    kept = upload["with"]["path"].split()
    run = _github_step()["run"]
    for flag in ("--json", "--junit", "--markdown"):
        path = run.split(flag, 1)[1].split()[0]
        assert path in kept
    assert upload.get("if") == "always()"


def test_the_workflow_command_runs_against_the_reference_server(tmp_path: Path) -> None:
    step = _github_step()
    assert "{port}" in step["env"]["AMP_SERVER_CMD"]
    marker = new_marker()
    server = (
        f"env AMP_CI_MARK={marker} AMP_REFERENCE_FAULTS=limit-clamped "
        "python -m reference_server --host 127.0.0.1 --port {port} --log-level warning"
    )
    (tmp_path / "amp-expectations.toml").write_text(
        f'[[expect]]\ncheck = "{FAILING_CHECK}"\noutcome = "fail"\nreason = "the fault under test"\n'
    )
    summary = tmp_path / "step-summary.md"
    script = step["run"].rstrip() + " --only list --no-fuzz\n"  # one area keeps the test quick
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=command_env(AMP_SERVER_CMD=server, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary)),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    report = read_json(tmp_path / "amp-report.json")
    validate(report, "report.schema.json")
    expected = [c for c in report["checks"] if c["expectation"] is not None]
    assert [c["id"].rsplit("/", 1)[-1] for c in expected] == [FAILING_CHECK]
    assert expected[0]["outcome"] == "fail" and expected[0]["expectation"]["met"] is True
    assert report["summary"]["expected_failures"] == 1
    for name in ("amp-junit.xml", "amp-summary.md", "amp-badge.json"):
        assert (tmp_path / name).stat().st_size > 0
    assert "## AMP v0.1.0 conformance" in summary.read_text()
    assert "::error" not in result.stdout  # the only failure was expected
    assert marked_processes(marker) == []
