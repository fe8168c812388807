"""A copy of this checkout as a git repository of its own, committed: what a fresh clone of it gives
(no tags unless a test adds one, no build products, the working tree's current files)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_IDENTITY = {
    "GIT_AUTHOR_NAME": "amp-conformance tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "amp-conformance tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
}


def git(cwd: Path, *arguments: str) -> str:
    """Run git in ``cwd`` with a fixed identity and no user or system configuration."""
    env = {**os.environ, **_IDENTITY, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    result = subprocess.run(
        ["git", *arguments], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return result.stdout


def copy_checkout(destination: Path, *, tag: str | None = None) -> Path:
    """The tracked and untracked-but-not-ignored files of this checkout, as they are on disk, in a new
    repository at ``destination`` with one commit (tagged ``tag`` when given)."""
    listed = git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():  # a deleted but still tracked file is not in the working tree
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git(destination, "init", "-q", "-b", "main")
    git(destination, "add", "-A")
    git(destination, "commit", "-q", "-m", "the checkout under test")
    if tag is not None:
        git(destination, "tag", "-a", tag, "-m", tag)
    return destination
