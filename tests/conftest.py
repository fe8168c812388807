"""Shared helpers of the project's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SPEC_DIR = REPO.parent / "shared" / "spec"


@pytest.fixture
def spec_dir() -> Path:
    """The spec folder beside the checkout (CI lays ../shared beside the clone)."""
    if not SPEC_DIR.is_dir():
        pytest.skip(f"the spec folder {SPEC_DIR} is not beside this checkout")
    return SPEC_DIR
