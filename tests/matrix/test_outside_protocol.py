"""Issue 35 §3: ``matrix`` takes every registered protocol. The toy protocol (``tests/engine/toy``, an
outside package known only by its dist-info entry point) runs as a column beside amp-0.1: its grid and
column render in the matrix JSON and HTML, and its badge's label is its record's."""

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
from tests.engine.test_third_protocol import TOY

#: The toy server on the port the matrix gives it (its package ships no command of its own).
TOY_SERVER = (
    "{python} -c 'import sys; from http.server import ThreadingHTTPServer; "
    "from toy_protocol.server import Handler; "
    'ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()\' {port}'
)

IMPLEMENTATIONS = (
    '[[implementation]]\nname = "reference"\nprotocol = "amp-0.1"\n'
    'server-cmd = "{python} -m reference_server --port {port}"\n\n'
    '[[implementation]]\nname = "toy kv"\nprotocol = "toy"\n'
    f"server-cmd = '''{TOY_SERVER}'''\n"
)


@pytest.fixture
def toy_env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site-packages"
    shutil.copytree(TOY, site, ignore=shutil.ignore_patterns("__pycache__"))
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def test_a_matrix_runs_an_outside_protocol_beside_amp01(tmp_path: Path, toy_env: dict[str, str]) -> None:
    (tmp_path / "impl.toml").write_text(IMPLEMENTATIONS, encoding="utf-8")
    command = [sys.executable, "-m", "amp_conformance", "matrix", "impl.toml", "--only", "health,get"]
    command += ["--no-fuzz", "--json", "m.json", "--html", "m.html", "--badges", "badges"]
    done = subprocess.run(command, cwd=tmp_path, env=toy_env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    matrix = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    jsonschema.validate(matrix, load_contract("matrix.schema.json"))
    toy = next(i for i in matrix["implementations"] if i["protocol"] == "toy")
    assert toy["verdict"] == "pass" and toy["must"]["total"] >= 1
    assert toy["requirements"]["TOY-GET-01"] == "pass"
    assert toy["claims_source"] is None and toy["claims"] is None  # the toy's record claims nothing
    assert matrix["protocols"]["toy"]["title"] == "Toy KV"
    assert [r["id"] for r in matrix["protocols"]["toy"]["requirements"]][:1] == ["TOY-GET-01"]
    page = (tmp_path / "m.html").read_text(encoding="utf-8")
    assert 'data-protocol="toy"' in page and "Toy KV: 4 requirements" in page and "toy kv" in page
    badge = json.loads((tmp_path / "badges" / f"{toy['slug']}.json").read_text(encoding="utf-8"))
    jsonschema.validate(badge, load_contract("badge.schema.json"))
    assert badge["label"] == "Toy KV 0.1"  # its record's label, not the default protocol's
    reference = json.loads((tmp_path / "badges" / "reference.json").read_text(encoding="utf-8"))
    assert reference["label"] == "AMP 0.1.0"


def test_an_outside_protocol_is_held_to_its_own_options(tmp_path: Path, toy_env: dict[str, str]) -> None:
    """A key is validated against the chosen protocol's declared options: another protocol's option
    is refused (one line), the toy's targets are the engine's common ones."""
    (tmp_path / "impl.toml").write_text(
        '[[implementation]]\nname = "t"\nprotocol = "toy"\nbase-url = "http://127.0.0.1:1"\n'
        'admin-token = "T"\n',
        encoding="utf-8",
    )
    command = [sys.executable, "-m", "amp_conformance", "matrix", "impl.toml"]
    done = subprocess.run(command, cwd=tmp_path, env=toy_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "admin-token is not an option of toy (it goes with protocol amp-0.1)" in done.stderr
    assert done.stderr.count("\n") == 1
