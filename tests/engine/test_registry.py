"""Issue 19: one catalogue model and schema, the registry, the check registry and the command's shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from amp_conformance.engine import registry
from amp_conformance.engine.catalogue import load_catalogue
from amp_conformance.engine.check_registry import checks_of
from amp_conformance.engine.resources import load_contract

SNAPSHOTS = Path(__file__).resolve().parents[1] / "suite"
CATALOGUES = [
    ("amp_conformance.amp01", "contract/requirements.json"),
    ("amp_conformance.amp11", "contract/requirements.json"),
    ("amp_conformance.validator", "catalogues/amr-lite.json"),
    ("amp_conformance.validator", "catalogues/memorycloud.json"),
]


@pytest.mark.parametrize(("package", "resource"), CATALOGUES)
def test_every_catalogue_validates_against_the_one_schema(package: str, resource: str) -> None:
    from importlib import resources

    document = json.loads(resources.files(package).joinpath(*resource.split("/")).read_text("utf-8"))
    jsonschema.validate(document, load_contract("requirements.schema.json"))
    catalogue = load_catalogue(package, resource)
    assert catalogue.requirements and all(
        r.level in ("MUST", "SHOULD", "MAY") for r in catalogue.requirements.values()
    )


def test_the_registry_finds_both_protocols_by_entry_point() -> None:
    from importlib.metadata import entry_points

    names = {point.name for point in entry_points(group=registry.GROUP)}
    assert {"amp-0.1", "amp-1.1"} <= names
    for name in ("amp-0.1", "amp-1.1"):
        assert registry.get(name).name == name
    assert registry.requirement("AMP11-INIT-01") is not None
    assert registry.requirement("AMP-READ-02") is not None
    assert registry.catalogue_of("AMP11-INIT-01") is registry.get("amp-1.1").catalogue
    with pytest.raises(KeyError, match="unknown protocol"):
        registry.get("amp-9")


@pytest.mark.parametrize(("protocol", "snapshot"), [("amp-0.1", "amp01"), ("amp-1.1", "amp11")])
def test_the_check_registry_lists_what_a_collection_listed_before_the_change(
    protocol: str, snapshot: str
) -> None:
    """The set of (check, ids, level), taken from ``--list`` before the registry existed."""
    before = json.loads((SNAPSHOTS / f"list_snapshot_{snapshot}.json").read_text())["checks"]
    now = [
        {
            "id": s.nodeid,
            "requirements": list(s.requirements),
            "level": str(s.level),
            "area": s.area,
            "title": s.title,
        }
        for s in checks_of(protocol)
    ]
    listed = {(c["id"], tuple(c["requirements"]), c["level"]) for c in now}
    missing = {(c["id"], tuple(c["requirements"]), c["level"]) for c in before} - listed
    assert not missing, sorted(missing)


def test_help_lists_every_subcommand_and_the_version_is_defined_once() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "amp_conformance", "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    for name in ("validate", "validate-contract", "report", "diff"):
        assert name in result.stdout
    from amp_conformance._version import __version__

    version = subprocess.run(
        [sys.executable, "-m", "amp_conformance", "--version"], capture_output=True, text=True, timeout=60
    )
    assert version.stdout.splitlines()[0] == f"amp-conformance {__version__}"
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert f'version = "{__version__}"' not in pyproject
