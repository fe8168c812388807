"""Real reports for the diff and summary tests: the list area of the reference server, clean and with
the ``limit-clamped`` fault (AMP-LIST-05), run in-process once per session."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.suite.inprocess import run_against_reference

FAULT = "limit-clamped"
FAULT_REQUIREMENT = "AMP-LIST-05"


def _report(directory: Path, name: str, env: dict[str, str]) -> Path:
    path = directory / f"{name}.json"
    run_against_reference(env, areas="list", admin=False, extra={"amp_json": str(path)})
    return path


@pytest.fixture(scope="session")
def report_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("reports")
    return {
        "clean": _report(directory, "clean", {}),
        "fault": _report(directory, "fault", {"AMP_REFERENCE_FAULTS": FAULT}),
    }


@pytest.fixture
def clean_report(report_paths: dict[str, Path]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(report_paths["clean"].read_text())
    return document


@pytest.fixture
def fault_report(report_paths: dict[str, Path]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(report_paths["fault"].read_text())
    return document


@pytest.fixture(scope="session", autouse=True)
def _not_on_github() -> Iterator[None]:
    """In-process runs must not write to a real CI job's step summary or annotations."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GITHUB_STEP_SUMMARY", raising=False)
        patch.delenv("GITHUB_ACTIONS", raising=False)
        yield
