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


def _is_run(step: dict[str, Any]) -> bool:
    return "amp-conformance" in str(step.get("run", "")).split()[:1]


def _by_hand_workflow() -> dict[str, Any]:
    """The GitHub workflow that runs the command itself (the other one uses the action)."""
    workflow: dict[str, Any] = next(
        block
        for block in _yaml_blocks()
        if "jobs" in block and any(_is_run(s) for s in block["jobs"]["amp-conformance"]["steps"])
    )
    return workflow


def _github_step() -> dict[str, Any]:
    steps = _by_hand_workflow()["jobs"]["amp-conformance"]["steps"]
    step: dict[str, Any] = next(s for s in steps if _is_run(s))
    return step


def _gitlab_command() -> str:
    job = next(b["amp-conformance"] for b in _yaml_blocks() if "script" in b.get("amp-conformance", {}))
    command: str = next(line for line in job["script"] if line.startswith("amp-conformance"))
    return command


def _words(shell: str) -> str:
    return " ".join(shell.replace("\\\n", " ").split())


def test_the_readme_links_the_ci_page() -> None:
    assert "docs/ci.md" in (REPO / "README.md").read_text(encoding="utf-8")


def test_the_gitlab_job_runs_the_same_command_as_the_workflow() -> None:
    assert _words(_gitlab_command()) == _words(_github_step()["run"])


def test_the_workflow_keeps_json_junit_and_markdown_as_artifacts() -> None:
    workflow = _by_hand_workflow()
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


INSTALL = re.compile(r'pip install "(amp-conformance @ git\+https://github\.com/OWNER/amp-conformance@REF)"')


def test_the_page_names_no_tag_that_does_not_exist_and_one_install_line() -> None:
    """Issue 38 item 23: the page named a tag `@v0.4.0` that never existed. Every install line is the
    same one, with placeholders a reader fills in (OWNER, REF), and the tests run it below."""
    text = DOC.read_text(encoding="utf-8")
    assert not re.search(r"@v\d+\.\d+\.\d+", text)
    lines = set(re.findall(r"pip install \"[^\"]*git\+[^\"]*\"", text))
    assert len(lines) == 1 and INSTALL.search(lines.pop())


def test_the_action_example_gives_one_target_and_only_declared_inputs() -> None:
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    uses = [
        step
        for block in _yaml_blocks()
        if "jobs" in block
        for job in block["jobs"].values()
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("OWNER/amp-conformance@")
    ]
    assert uses, "docs/ci.md does not use the action"
    for step in uses:
        assert set(step["with"]) <= set(action["inputs"]), set(step["with"]) - set(action["inputs"])
        targets = {"base-url", "server-cmd", "mcp-command", "app"} & set(step["with"])
        assert len(targets) == 1 or targets == {"base-url", "server-cmd"}


def _build_lines() -> list[str]:
    block = next(
        b
        for b in re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
        if "python -m build" in b
    )
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def test_build_and_twine_are_installed_before_they_are_used() -> None:
    lines = _build_lines()
    install = next(i for i, line in enumerate(lines) if re.match(r"python -m pip install build twine$", line))
    assert install < min(i for i, line in enumerate(lines) if line.startswith(("python -m build", "twine ")))


@pytest.mark.slow
def test_the_install_and_build_lines_work_against_the_local_checkout(tmp_path: Path) -> None:
    """The page's install line with the repository's URL replaced by this checkout's (a committed copy,
    tagged), into a fresh virtual environment without the dev tools; then the build lines, as written,
    in that copy with that environment first on PATH."""
    import venv

    from tests.checkout import copy_checkout

    clone = copy_checkout(tmp_path / "amp-conformance", tag="v9.8.7")
    (line,) = set(INSTALL.findall(DOC.read_text(encoding="utf-8")))
    requirement = line.replace("https://github.com/OWNER/amp-conformance", clone.as_uri()).replace(
        "@REF", "@v9.8.7"
    )
    venv.create(tmp_path / "venv", with_pip=True)
    bin_dir = tmp_path / "venv" / "bin"
    env = {k: v for k, v in command_env().items() if not k.startswith(("AMP_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    # a current pip, as CI images and .ci/run have (the pip Python 3.11 bundles refuses a file: URL here)
    upgrade = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert upgrade.returncode == 0, upgrade.stderr[-3000:]
    install = subprocess.run(
        [str(bin_dir / "pip"), "install", "-q", requirement],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    version = subprocess.run(
        [str(bin_dir / "amp-conformance"), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert version.stdout.splitlines()[0] == "amp-conformance 9.8.7", version.stdout + version.stderr
    script = "\n".join(_build_lines())
    built = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert sorted(p.name for p in (clone / "dist").iterdir()) == [
        "amp_conformance-9.8.7-py3-none-any.whl",
        "amp_conformance-9.8.7.tar.gz",
    ]
    assert (bin_dir / "twine").exists() and (bin_dir / "amp-conformance").exists()
