"""The pre-commit hooks (.pre-commit-hooks.yaml) as a user's repository runs them: `pre-commit try-repo`
on a committed copy of this checkout (pre-commit installs the hook's package into its own environment
with pip, from the local copy), against files committed in a temporary repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checkout import REPO, copy_checkout, git

yaml = pytest.importorskip("yaml")

HOOKS = REPO / ".pre-commit-hooks.yaml"
GOOD = (REPO / "fixtures" / "amr-lite" / "valid" / "CLAUDE.md").read_text(encoding="utf-8")
BAD = "# Memory\n\n- [type:fact] [src:guessed] [when:2026-06-01] [rec:2026-06-01] The build takes a minute\n"


def _hooks() -> dict[str, dict[str, object]]:
    return {hook["id"]: hook for hook in yaml.safe_load(HOOKS.read_text(encoding="utf-8"))}


def test_each_hook_runs_a_validator_profile_on_its_files() -> None:
    """The hooks name real `validate` profiles, pass several files at once, and pick the right files."""
    hooks = _hooks()
    assert set(hooks) == {"amp-validate", "amp-validate-amr-lite", "amp-validate-memorycloud"}
    profiles = {
        "amp-validate": "cells",
        "amp-validate-amr-lite": "amr-lite",
        "amp-validate-memorycloud": "memorycloud",
    }
    for hook_id, profile in profiles.items():
        hook = hooks[hook_id]
        assert hook["entry"] == f"amp-conformance validate --profile {profile}"
        assert hook["language"] == "python" and hook.get("pass_filenames", True) is True
    matches = {hook_id: re.compile(str(hook["files"])) for hook_id, hook in hooks.items()}
    assert matches["amp-validate-amr-lite"].search("CLAUDE.md")
    assert matches["amp-validate-amr-lite"].search("docs/MEMORY.md")
    assert matches["amp-validate-amr-lite"].search("MEMORY_ARCHIVE.md")
    assert not matches["amp-validate-amr-lite"].search("README.md")
    assert matches["amp-validate-memorycloud"].search("suites/team.zip")
    assert matches["amp-validate"].search("data/team.cells.jsonl")
    assert not matches["amp-validate"].search("package.json")


def _try_repo(hooks_repo: Path, user: Path, home: Path, *files: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "try-repo",
            str(hooks_repo),
            "amp-validate-amr-lite",
            "--files",
            *files,
        ],
        cwd=user,
        capture_output=True,
        text=True,
        timeout=900,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith(("AMP_", "PRE_COMMIT"))},
            "PRE_COMMIT_HOME": str(home),
        },
    )


@pytest.mark.slow
def test_try_repo_passes_a_good_memory_file_and_fails_a_bad_one_with_file_line_col_and_rule(
    tmp_path: Path,
) -> None:
    hooks_repo = copy_checkout(tmp_path / "amp-conformance")
    user = tmp_path / "project"
    (user / "good").mkdir(parents=True)
    (user / "bad").mkdir()
    (user / "good" / "CLAUDE.md").write_text(GOOD, encoding="utf-8")
    (user / "bad" / "MEMORY.md").write_text(BAD, encoding="utf-8")
    (user / "notes.md").write_text(BAD, encoding="utf-8")  # not a memory file by name: not checked
    git(user, "init", "-q")
    git(user, "add", "-A")
    git(user, "commit", "-q", "-m", "memory files")

    good = _try_repo(hooks_repo, user, tmp_path / "home", "good/CLAUDE.md", "notes.md")
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-3000:]
    assert re.search(r"AMR-lite memory files\.+Passed", good.stdout), good.stdout

    bad = _try_repo(hooks_repo, user, tmp_path / "home", "bad/MEMORY.md", "good/CLAUDE.md")
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-3000:]
    assert re.search(r"AMR-lite memory files\.+Failed", bad.stdout), bad.stdout
    assert "bad/MEMORY.md:3:20: AMR-LITE-04: src 'guessed'" in bad.stdout, bad.stdout
    assert "good/CLAUDE.md:" not in bad.stdout
