"""Selection by name (issue 38 item 16): ``--list -k``, a parametrized check's base name, and failure
lines naming the check as ``--check`` takes it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from amp_conformance.cli import main


def _listed(capsys: pytest.CaptureFixture[str], *arguments: str) -> list[str]:
    assert main(["--list", "--format", "json", *arguments]) == 0
    return [c["id"] for c in json.loads(capsys.readouterr().out)["checks"]]


def test_list_honours_k(capsys: pytest.CaptureFixture[str]) -> None:
    every = _listed(capsys)
    matrix = _listed(capsys, "-k", "access_matrix")
    assert matrix and len(matrix) < len(every)
    assert matrix == [i for i in every if "access_matrix" in i]
    narrowed = _listed(capsys, "-k", "access_matrix and not exact")
    assert narrowed == [i for i in matrix if "exact" not in i.split("::")[-1]]


def test_check_takes_a_parametrized_checks_base_name(capsys: pytest.CaptureFixture[str]) -> None:
    every = _listed(capsys)
    params = [i for i in every if i.split("::")[-1].startswith("test_access_matrix[")]
    assert len(params) > 1
    assert _listed(capsys, "--check", "test_access_matrix") == params
    one = params[0].split("::")[-1]
    assert _listed(capsys, "--check", one) == [params[0]]


def test_failure_lines_name_the_check_as_check_takes_it(capsys: pytest.CaptureFixture[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "amp_conformance", "--only", "cre", "--no-fuzz"],
        capture_output=True,
        text=True,
        env={**os.environ, "AMP_REFERENCE_FAULTS": "create-returns-200"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    failures = [n for n, line in enumerate(lines) if line.startswith("  FAIL ")]
    assert failures, done.stdout
    for n in failures:
        said = [line.strip() for line in lines[n + 1 : n + 4] if line.strip().startswith("check: ")]
        assert said, lines[n : n + 4]
        words = shlex.split(said[0].removeprefix("check: "))
        assert words[0] == "--check" and len(words) == 2
        assert len(_listed(capsys, *words)) >= 1
