"""``matrix diff``: a clean and a regressed matrix exit 1, naming implementation, check and requirement."""

from __future__ import annotations

import json
from pathlib import Path

from tests.matrix.conftest import run_matrix_command

TEMPLATE = """
[[implementation]]
name = "server one"
protocol = "amp-0.1"
server-cmd = "{python} -m reference_server --port {port}"
environment = { AMP_REFERENCE_FAULTS = "@FAULTS@" }

[[implementation]]
name = "server two"
protocol = "amp-0.1"
server-cmd = "{python} -m reference_server --port {port}"
"""


def _matrix(directory: Path, name: str, faults: str) -> Path:
    (directory / f"{name}.toml").write_text(TEMPLATE.replace("@FAULTS@", faults), encoding="utf-8")
    done = run_matrix_command(
        [f"{name}.toml", "--only", "read", "--no-fuzz", "--json", f"{name}.json"], directory
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return directory / f"{name}.json"


def test_a_regression_exits_1_and_names_what_regressed(tmp_path: Path) -> None:
    clean = _matrix(tmp_path, "clean", "")
    regressed = _matrix(tmp_path, "regressed", "get-no-access-count")
    done = run_matrix_command(["diff", str(clean), str(regressed)], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("REGRESSED")
    assert "server one: changed (pass -> fail)" in done.stdout
    assert "server two" not in done.stdout
    assert "AMP-READ-02" in done.stdout and "test_each_read_adds_one_to_access_count" in done.stdout
    as_json = run_matrix_command(["diff", str(clean), str(regressed), "--format", "json"], tmp_path)
    diff = json.loads(as_json.stdout)
    one = next(e for e in diff["implementations"] if e["name"] == "server one")
    assert diff["regressed"] and one["regressed"] and one["regressions"]
    assert any("AMP-READ-02" in r["requirements"] for r in one["regressions"])
    markdown = run_matrix_command(["diff", str(clean), str(regressed), "--format", "markdown"], tmp_path)
    assert markdown.returncode == 1 and "### server one" in markdown.stdout
    assert r"AMP\-READ\-02" in markdown.stdout
    page = run_matrix_command(
        ["diff", str(clean), str(regressed), "--format", "html", "--output", "d.html"], tmp_path
    )
    assert page.returncode == 1 and "AMP-READ-02" in (tmp_path / "d.html").read_text(encoding="utf-8")
    fixed = run_matrix_command(["diff", str(regressed), str(clean)], tmp_path)
    assert fixed.returncode == 0 and "fix: fail -> pass" in fixed.stdout
    same = run_matrix_command(["diff", str(clean), str(clean)], tmp_path)
    assert same.returncode == 0 and same.stdout.startswith("NO REGRESSION")
    bad = run_matrix_command(["diff", str(clean), str(tmp_path / "clean.toml")], tmp_path)
    assert bad.returncode == 2 and "is not JSON" in bad.stderr
