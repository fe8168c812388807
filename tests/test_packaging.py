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


def test_the_version_comes_from_git_tags_alone() -> None:
    """hatch-vcs derives it from the tags at build time; no source file carries it, none is written."""
    import importlib.metadata
    import re

    from amp_conformance._version import __version__

    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"], "pyproject.toml carries a literal version"
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["source"] == "vcs"
    assert any(r.startswith("hatch-vcs") for r in project["build-system"]["requires"])
    assert "hooks" not in project["tool"]["hatch"].get("build", {}), "a build would write into the tree"
    source = (REPO / "amp_conformance" / "_version.py").read_text()
    assert not re.search(r"""["']\d+\.\d+""", source), "_version.py carries a version literal"
    assert importlib.metadata.version("amp-conformance") == __version__


def test_version_names_each_registered_protocols_catalogue() -> None:
    """`--version`: the tool's version, then one line per registered protocol: its name, title and the
    size of the catalogue it checks."""
    from amp_conformance._version import __version__
    from amp_conformance.engine import registry

    result = subprocess.run(
        [sys.executable, "-m", "amp_conformance", "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and result.stderr == ""
    expected = [f"amp-conformance {__version__}"] + [
        f"  {p.name}: {p.title} catalogue, {len(p.catalogue.requirements)} requirements"
        for p in registry.protocols()
    ]
    assert result.stdout.splitlines() == expected
    assert len(expected) >= 3  # amp-0.1 and amp-1.1 at least


def _build(tree: Path, out: Path, *what: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "build", *what, "--outdir", str(out), str(tree)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def _version_printed(site: Path) -> list[str]:
    """``amp-conformance --version`` run from an unpacked or ``--target`` install (its lines)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AMP_")}
    result = subprocess.run(
        [sys.executable, "-m", "amp_conformance", "--version"],
        cwd=site.parent,
        env={**env, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.mark.slow
def test_a_tag_gives_the_sdist_and_wheel_their_version_and_the_command_prints_it(tmp_path: Path) -> None:
    """A release: tag v9.8.7, build (the wheel from the sdist, as `python -m build` does), and the wheel,
    `pip install .` from the unpacked sdist and from a `git archive` (no .git in either) print 9.8.7,
    with the catalogues."""
    import tarfile

    from tests.checkout import copy_checkout

    tree = copy_checkout(tmp_path / "clone", tag="v9.8.7")
    _build(tree, tmp_path / "dist")
    assert sorted(p.name for p in (tmp_path / "dist").iterdir()) == [
        "amp_conformance-9.8.7-py3-none-any.whl",
        "amp_conformance-9.8.7.tar.gz",
    ]
    site = tmp_path / "wheel"
    with zipfile.ZipFile(tmp_path / "dist" / "amp_conformance-9.8.7-py3-none-any.whl") as archive:
        archive.extractall(site)
    printed = _version_printed(site)
    assert printed[0] == "amp-conformance 9.8.7"
    from amp_conformance.engine import registry

    for protocol in registry.protocols():
        line = f"  {protocol.name}: {protocol.title} catalogue, {len(protocol.catalogue.requirements)} "
        assert any(shown.startswith(line) for shown in printed), (line, printed)

    with tarfile.open(tmp_path / "dist" / "amp_conformance-9.8.7.tar.gz") as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    assert not (unpacked / ".git").exists()
    target = tmp_path / "from-sdist"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(unpacked)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    assert _version_printed(target)[0] == "amp-conformance 9.8.7"

    # `git archive`, as a GitHub tarball (how the runner fetches the action, then pip-installs it): no
    # .git, the version comes from .git_archival.txt (export-subst)
    archive_tar = tmp_path / "archive.tar"
    subprocess.run(["git", "archive", "-o", str(archive_tar), "v9.8.7"], cwd=tree, check=True, timeout=120)
    with tarfile.open(archive_tar) as archive:
        archive.extractall(tmp_path / "archived", filter="data")
    target = tmp_path / "from-archive"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(tmp_path / "archived"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    assert _version_printed(target)[0] == "amp-conformance 9.8.7"


@pytest.mark.slow
def test_a_clone_without_tags_still_builds(tmp_path: Path) -> None:
    """CI's fresh clone may have no tags: the build still works, with a development version."""
    from tests.checkout import copy_checkout

    tree = copy_checkout(tmp_path / "clone")
    _build(tree, tmp_path / "dist", "--wheel")
    (wheel,) = (tmp_path / "dist").glob("amp_conformance-*.whl")
    version = wheel.name.split("-")[1]
    assert ".dev" in version, wheel.name
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "site")
    assert _version_printed(tmp_path / "site")[0] == f"amp-conformance {version.replace('_', '+')}"


def test_the_wheel_carries_the_package_version(installed: Path) -> None:
    """The wheel's metadata and what the unpacked wheel reports as its version agree (the editable
    install's version may be older than the tree: it was computed when it was installed)."""
    __version__ = _version_printed(installed)[0].removeprefix("amp-conformance ")

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
