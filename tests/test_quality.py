"""Lint and type-check as part of the tests (the brief: ruff and mypy run with the tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


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
