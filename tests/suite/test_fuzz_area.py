"""The fuzz area inside the suite: it finds what only unusual input reaches, nothing on a correct server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.suite.inprocess import run_against_reference

FUZZ_ONLY = ["nonascii-session-500", "huge-integer-500", "deep-metadata-500"]
BUDGET = {"amp_fuzz_examples": 10, "amp_fuzz_seconds": 20.0, "amp_seed": 1234}


def test_the_fuzz_area_finds_nothing_on_the_reference_server() -> None:
    outcome = run_against_reference({}, areas="fuzz", fuzz=True, extra=BUDGET)
    assert outcome.run is not None
    results = list(outcome.run.results.values())
    assert len(results) == 3 and all(r.outcome == "pass" for r in results), [
        (r.name, r.message) for r in results
    ]
    assert outcome.exit_code == 0


@pytest.mark.parametrize("fault", FUZZ_ONLY)
def test_unusual_input_faults_are_caught_by_the_fuzz_area_only(fault: str) -> None:
    outcome = run_against_reference({"AMP_REFERENCE_FAULTS": fault}, fuzz=True, extra=BUDGET)
    assert outcome.run is not None
    results = list(outcome.run.results.values())
    fuzz_failures = [r for r in results if r.area == "fuzz" and r.outcome == "fail"]
    assert any("AMP-ERR-07" in r.requirements for r in fuzz_failures), [(r.name, r.message) for r in results]
    assert "reproduce: curl" in fuzz_failures[0].message
    # the byte-level family sends numbers beyond any float on purpose, so it may see huge-integer-500 too
    hand_written = [r for r in results if r.area not in ("fuzz", "bytes")]
    assert not [r.name for r in hand_written if r.outcome in ("fail", "error")]
    assert not [r.name for r in hand_written if any("AMP-ERR-07" in w.message for w in r.warnings)]
    assert outcome.exit_code == 1


def test_the_upstream_contract_loads_and_is_fuzzed_without_crashing(spec_dir: Path) -> None:
    upstream = spec_dir / "upstream" / "openapi.json"
    outcome = run_against_reference(
        {}, areas="fuzz", fuzz=True, extra={**BUDGET, "amp_openapi": str(upstream)}
    )
    assert outcome.run is not None
    results = list(outcome.run.results.values())
    assert len(results) == 3
    assert not [r for r in results if r.outcome == "error"], [(r.name, r.message) for r in results]
    assert outcome.exit_code in (0, 1)  # findings against a contract we did not write are reported as such


def test_fuzzed_searches_and_lists_only_see_the_fuzz_owners_cells() -> None:
    """A generated search or list that names no owner would return cells other checks made and share
    (the stateful phase then PATCHes and DELETEs what it found): a false failure of the search checks
    that judge those cells after the fuzz area ran. Both are pinned to the fuzz owner."""
    from types import SimpleNamespace

    from amp_conformance.amp01.fuzz_profile import PROFILE
    from amp_conformance.fuzz._engine import _Isolation

    isolation = _Isolation(PROFILE, "amp-ct-run-o9")
    search = SimpleNamespace(
        operation=SimpleNamespace(path="/amp/v1/memories/search"),
        method="POST",
        body={"query": "x"},
        query=None,
    )
    listing = SimpleNamespace(
        operation=SimpleNamespace(path="/memories"), method="GET", body=None, query=None
    )
    alias = SimpleNamespace(
        operation=SimpleNamespace(path="/memories/query"), method="GET", body=None, query={"limit": 3}
    )
    read = SimpleNamespace(
        operation=SimpleNamespace(path="/memories/{id}"), method="GET", body=None, query={}
    )
    for case in (search, listing, alias, read):
        isolation.before_call(None, case, {})
    assert search.body == {"query": "x", "owner_id": "amp-ct-run-o9"}
    assert listing.query == {"owner_id": "amp-ct-run-o9"}
    assert alias.query == {"limit": 3, "owner_id": "amp-ct-run-o9"}
    assert read.query == {}
