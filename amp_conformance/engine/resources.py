"""Locate the files the package ships: contract documents and fixture vectors.

The wheel carries ``fixtures/`` as ``amp_conformance/fixtures``; a source checkout keeps it at the
repository root. Both layouts resolve through the functions here, so no module hard-codes a path.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

_PACKAGE_DIR = Path(str(resources.files("amp_conformance")))


def contract_path(name: str, protocol: str | None = None) -> Path:
    """Path of a bundled contract file.

    Without ``protocol``: the schemas of our own outputs (``contract_path("report.schema.json")``); with
    it, a protocol package's contract files (``contract_path("openapi.json", PACKAGE)``).
    """
    folder = _PACKAGE_DIR / protocol if protocol else _PACKAGE_DIR
    return folder / "contract" / name


@cache
def load_contract(name: str, protocol: str | None = None) -> Any:
    """Parsed JSON of a bundled contract file (cached; treat the result as read-only)."""
    return json.loads(contract_path(name, protocol).read_text(encoding="utf-8"))


def fixtures_path(*parts: str) -> Path:
    """Path inside the fixture vectors, in the wheel or in a source checkout."""
    installed = _PACKAGE_DIR / "fixtures"
    base = installed if installed.is_dir() else _PACKAGE_DIR.parent / "fixtures"
    return base.joinpath(*parts)


def load_fixture(*parts: str) -> Any:
    """Parsed JSON of one fixture file."""
    return json.loads(fixtures_path(*parts).read_text(encoding="utf-8"))
