"""A matrix is exactly N ordinary runs: each column is its standalone run, outcome for outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema

from amp_conformance.reports.html_model import read_checks, requirement_outcomes
from tests.matrix.conftest import ROOT, MatrixRun, report_of

SCHEMA = json.loads((ROOT / "amp_conformance/contract/matrix.schema.json").read_text(encoding="utf-8"))
BADGE_SCHEMA = json.loads((ROOT / "amp_conformance/contract/badge.schema.json").read_text(encoding="utf-8"))


def _column(run: MatrixRun, name: str) -> dict[str, Any]:
    return next(i for i in run.matrix["implementations"] if i["name"] == name)


def test_exit_1_and_the_report_validates(matrix_run: MatrixRun) -> None:
    assert matrix_run.exit_code == 1, matrix_run.stdout
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(
        matrix_run.matrix
    )
    verdicts = {i["name"]: i["verdict"] for i in matrix_run.matrix["implementations"]}
    assert verdicts == {
        "reference": "pass",
        "upstream, bare ids": "pass",
        "no access count": "fail",
        "hostile <img src=x onerror=alert(1)>": "fail",
        "v1.1 core": "pass",
        "never starts": "not-started",
    }
    assert set(matrix_run.matrix["protocols"]) == {"amp-0.1", "amp-1.1"}
    upstream = _column(matrix_run, "upstream, bare ids")["conventions"]
    assert upstream["id_form"] == "bare" and upstream["refusal_code"] == "ACCESS_DENIED"
    assert _column(matrix_run, "v1.1 core")["conventions"]["declared_level"] == "core"
    assert _column(matrix_run, "v1.1 core")["claims"]["amp_conformance"] == "core"


def test_a_column_that_cannot_start_says_why(matrix_run: MatrixRun) -> None:
    dead = _column(matrix_run, "never starts")
    assert dead["started"] is False and dead["exit_code"] == 2 and dead["report"] is None
    assert "exited" in dead["problem"] and dead["checks"] == []
    assert "never starts: could not start" in matrix_run.stdout


def test_each_column_matches_its_standalone_run(matrix_run: MatrixRun, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for impl in matrix_run.matrix["implementations"]:
        if not impl["started"]:
            continue
        own = report_of(matrix_run, impl["name"])
        standalone_path = tmp_path / f"{impl['slug']}.json"
        command = impl["command"].replace(str(matrix_run.directory / impl["report"]), str(standalone_path))
        assert command != impl["command"] and command.startswith(f"cd {matrix_run.directory}")
        done = subprocess.run(["sh", "-c", command], env=env, capture_output=True, text=True, check=False)
        assert done.returncode == impl["exit_code"], done.stdout + done.stderr
        standalone = json.loads(standalone_path.read_text(encoding="utf-8"))
        outcomes = {c["id"]: c["outcome"] for c in standalone["checks"]}
        assert {c["id"]: c["outcome"] for c in impl["checks"]} == outcomes, impl["name"]
        assert {c["id"]: c["outcome"] for c in own["checks"]} == outcomes, impl["name"]
        cells = {rid: o for rid, (o, _) in requirement_outcomes(read_checks(standalone)).items()}
        assert impl["requirements"] == cells, impl["name"]


def test_badges_and_site(matrix_run: MatrixRun) -> None:
    for impl in matrix_run.matrix["implementations"]:
        for folder in (matrix_run.badges, matrix_run.site / "badges"):
            document = json.loads((folder / f"{impl['slug']}.json").read_text(encoding="utf-8"))
            jsonschema.validate(document, BADGE_SCHEMA)
            assert document["label"] == {"amp-0.1": "AMP 0.1.0", "amp-1.1": "AMP 1.1"}[impl["protocol"]]
        page = matrix_run.site / f"{impl['slug']}.html"
        assert page.exists() == impl["started"]
    index = (matrix_run.site / "index.html").read_text(encoding="utf-8")
    assert 'href="reference.html"' in index
    site_matrix = json.loads((matrix_run.site / "matrix.json").read_text(encoding="utf-8"))
    assert (matrix_run.site / site_matrix["implementations"][0]["report"]).exists()
    red = json.loads((matrix_run.badges / "no-access-count.json").read_text(encoding="utf-8"))
    assert red["color"] == "red" and red["message"].startswith("MUST ")
    grey = json.loads((matrix_run.badges / "never-starts.json").read_text(encoding="utf-8"))
    assert grey == {"schemaVersion": 1, "label": "AMP 0.1.0", "message": "MUST 0/0", "color": "lightgrey"}
