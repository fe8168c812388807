"""Issue 19: a third protocol is one package plus one registration, with no edit to any shared file.

The toy protocol (``tests/engine/toy``) has exactly these files: ``toy_protocol/__init__.py``,
``protocol.py`` (its :class:`Protocol`, session and check context), ``server.py`` (a tiny HTTP server
for the test), ``contract/requirements.json`` (its catalogue), ``checks/__init__.py``,
``checks/pytest.ini`` and ``checks/test_toy.py`` (three checks), and its registration, the
``toy_protocol-0.1.dist-info`` folder whose ``entry_points.txt`` names it in the
``amp_conformance.protocols`` group. Nothing else in the repository knows it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from amp_conformance.engine.resources import load_contract

TOY = Path(__file__).resolve().parent / "toy"
TOY_FILES = {
    "toy_protocol/__init__.py",
    "toy_protocol/protocol.py",
    "toy_protocol/server.py",
    "toy_protocol/contract/requirements.json",
    "toy_protocol/checks/__init__.py",
    "toy_protocol/checks/pytest.ini",
    "toy_protocol/checks/test_toy.py",
    "toy_protocol-0.1.dist-info/METADATA",
    "toy_protocol-0.1.dist-info/entry_points.txt",
}


@pytest.fixture
def toy_path(tmp_path: Path) -> Path:
    """The toy package on a path of its own (as an installed distribution would be)."""
    target = tmp_path / "site"
    shutil.copytree(TOY, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _run(toy_path: Path, *args: str, fault: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(toy_path), "TOY_FAULT": fault}
    command = [sys.executable, "-m", "amp_conformance", "--protocol", "toy", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, cwd=toy_path)


def test_the_toy_package_is_what_the_docstring_says() -> None:
    found = {str(p.relative_to(TOY)) for p in TOY.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert found == TOY_FILES


def test_the_registry_finds_it_and_lists_its_checks(toy_path: Path) -> None:
    listed = _run(toy_path, "--list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    jsonschema.validate(document, load_contract("list.schema.json"))
    assert [(c["id"], c["level"]) for c in document["checks"]] == [
        ("test_toy.py::test_health_and_unknown_keys", "MUST"),
        ("test_toy.py::test_put_stores_the_body", "MUST"),
        ("test_toy.py::test_values_can_be_overwritten", "MUST"),
    ]
    protocols = _run(toy_path, "--list-protocols")
    assert "toy" in protocols.stdout.split()


def test_a_toy_run_passes_and_writes_every_report(toy_path: Path) -> None:
    out = toy_path / "out"
    result = _run(
        toy_path,
        "--json",
        str(out / "r.json"),
        "--html",
        str(out / "r.html"),
        "--markdown",
        str(out / "r.md"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verdict: PASS" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    report = json.loads((out / "r.json").read_text())
    jsonschema.validate(report, load_contract("report.schema.json"))
    assert report["protocol"] == "toy"
    assert {c["outcome"] for c in report["checks"]} == {"pass"}
    assert [r["id"] for r in report["catalogue"]["requirements"]][:1] == ["TOY-GET-01"]
    page = (out / "r.html").read_text()
    assert "TOY-PUT-01" in page and "<script>alert(1)</script>" not in page
    assert "MUST checks passed: **3/3**" in (out / "r.md").read_text()


def test_a_fault_fails_its_requirement_once_and_blocks_the_step_behind_it(toy_path: Path) -> None:
    out = toy_path / "out"
    reports = ["--json", str(out / "r.json"), "--html", str(out / "r.html"), "--markdown", str(out / "r.md")]
    result = _run(toy_path, *reports, fault="put-ignored")
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads((out / "r.json").read_text())
    jsonschema.validate(report, load_contract("report.schema.json"))
    outcomes = {c["name"]: c for c in report["checks"]}
    assert outcomes["test_health_and_unknown_keys"]["outcome"] == "pass"
    assert outcomes["test_put_stores_the_body"]["outcome"] == "fail"
    blocked = outcomes["test_values_can_be_overwritten"]
    assert blocked["outcome"] == "blocked"
    assert blocked["blocked_by"] == {
        "requirement": "TOY-PUT-01",
        "step": "storing a value",
        "check": "test_toy.py::test_put_stores_the_body",
    }
    assert report["summary"]["must_failures"] == 1
    assert "FAIL  TOY-PUT-01 (MUST)" in result.stdout
    assert "TOY-PUT-01" in (out / "r.md").read_text() and "TOY-PUT-01" in (out / "r.html").read_text()


def test_an_unknown_protocol_is_a_usage_error(toy_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(toy_path)}
    result = subprocess.run(
        [sys.executable, "-m", "amp_conformance", "--protocol", "nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2
    assert "unknown protocol 'nope'" in result.stderr and "toy" in result.stderr
    assert "Traceback" not in result.stderr
