"""The wheel: what `pip install .` gives a new user (packages, contract files, fixtures, commands)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout, unpacked into a folder of its own (dependencies: this venv's)."""
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = out.glob("amp_conformance-*.whl")
    target = out / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    entry_points = next(target.glob("*.dist-info")) / "entry_points.txt"
    text = entry_points.read_text()
    assert "amp-conformance = amp_conformance._command:entry" in text
    assert "amp-reference-server = reference_server.amp01.__main__:main" in text
    assert "amp_conformance = amp_conformance.plugin" in text
    return target


def test_the_version_is_defined_once() -> None:
    """`amp_conformance/_version.py` is the one version source: pyproject names it, never a literal."""
    import importlib.metadata

    from amp_conformance._version import __version__

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"], "pyproject.toml carries a literal version"
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "amp_conformance/_version.py"
    assert importlib.metadata.version("amp-conformance") == __version__


def test_the_wheel_carries_the_package_version(installed: Path) -> None:
    from amp_conformance._version import __version__

    (dist_info,) = installed.glob("*.dist-info")
    assert dist_info.name == f"amp_conformance-{__version__}.dist-info"
    metadata = (dist_info / "METADATA").read_text().splitlines()
    assert f"Version: {__version__}" in metadata


def test_the_wheel_ships_contract_files_fixtures_and_check_configuration(installed: Path) -> None:
    package = installed / "amp_conformance"
    for name in ("openapi.json", "memory-cell.schema.json", "requirements.json"):
        json.loads((package / "amp01" / "contract" / name).read_text())
    for name in ("report.schema.json", "list.schema.json"):
        json.loads((package / "contract" / name).read_text())
    assert (package / "amp01" / "checks" / "pytest.ini").is_file()
    shipped = {p.relative_to(package / "fixtures") for p in (package / "fixtures").rglob("*.json")}
    in_repo = {p.relative_to(REPO / "fixtures") for p in (REPO / "fixtures").rglob("*.json")}
    assert shipped == in_repo


def test_the_installed_reference_server_answers_health_within_5_seconds(
    installed: Path, tmp_path: Path
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(installed)}
    env = {k: v for k, v in env.items() if not k.startswith("AMP_")}
    server = subprocess.Popen(
        [sys.executable, "-m", "reference_server", "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        started = time.monotonic()
        body = None
        while time.monotonic() - started < 5 and body is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/amp/v1/health", timeout=1) as reply:
                    body = json.load(reply)
            except OSError:
                time.sleep(0.1)
        assert body == {"status": "ok", "amp_version": "0.1.0"}, "no health answer within 5 s"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=5) as reply:
            served = reply.read()
        assert served == (installed / "amp_conformance" / "amp01" / "contract" / "openapi.json").read_bytes()
    finally:
        server.terminate()
        server.wait(10)
