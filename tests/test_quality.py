"""Lint and type-check as part of the tests (the brief: ruff and mypy run with the tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    result = _run(sys.executable, "-m", "ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied() -> None:
    result = _run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing() -> None:
    result = _run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_import_circles() -> None:
    """No module imports, directly or through others, a module that imports it (type-only imports count)."""
    import grimp

    for package in ("amp_conformance", "reference_server"):
        graph = grimp.build_graph(package)
        circles = sorted(
            {
                tuple(sorted((module, imported)))
                for module in graph.modules
                for imported in graph.find_modules_directly_imported_by(module)
                if graph.chain_exists(importer=imported, imported=module)
            }
        )
        assert circles == [], f"import circles in {package}: {circles}"


def test_the_layers_hold() -> None:
    """Issue 19: the engine imports no protocol package and neither the plugin nor the command; the
    plugin and the command import no protocol package (they find protocols through the registry)."""
    import grimp

    graph = grimp.build_graph("amp_conformance")
    protocols = ("amp_conformance.amp01", "amp_conformance.amp11")
    engine = {m for m in graph.modules if m.startswith("amp_conformance.engine")}
    for module in sorted(engine):
        for forbidden in (*protocols, "amp_conformance.plugin", "amp_conformance.cli"):
            assert not graph.chain_exists(importer=module, imported=forbidden, as_packages=True), (
                f"{module} imports {forbidden}"
            )
    for top in ("amp_conformance.plugin", "amp_conformance.cli"):
        direct = graph.find_modules_directly_imported_by(top)
        assert not [m for m in direct if m.startswith(protocols)], f"{top} imports a protocol package"
        assert not graph.chain_exists(importer=top, imported="amp_conformance.amp01.context")


def test_the_plugin_the_command_and_the_engine_name_no_protocol() -> None:
    """The same bar as ``grep -n "amp-0.1\\|amp-1.1\\|amp01\\|amp11" plugin.py cli.py engine/``: nothing
    outside the registry's default list."""
    import re

    package = ROOT / "amp_conformance"
    files = [package / "plugin.py", package / "cli.py", *sorted((package / "engine").glob("*.py"))]
    pattern = re.compile(r"amp-0\.1|amp-1\.1|amp01|amp11")
    found = []
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        allowed = _default_list_lines(lines) if path.name == "registry.py" else set()
        found += [
            f"{path.name}:{n}" for n, line in enumerate(lines, 1) if pattern.search(line) and n not in allowed
        ]
    assert found == []


def _default_list_lines(lines: list[str]) -> set[int]:
    """The line numbers of ``DEFAULT_PROTOCOLS = {...}`` and ``DEFAULT_PROTOCOL = ...`` in registry.py."""
    allowed: set[int] = set()
    inside = False
    for number, line in enumerate(lines, 1):
        if line.startswith("DEFAULT_PROTOCOLS = {"):
            inside = True
        if inside or line.startswith("DEFAULT_PROTOCOL = "):
            allowed.add(number)
        if inside and line.startswith("}"):
            inside = False
    return allowed
