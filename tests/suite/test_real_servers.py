"""Behaviour observed on real AMP servers (issue 22, "Exact on real servers"), each modelled by a fake
or a reference-server fault, and the verdict the suite must give it: no false failure, one root cause,
a consistent ``blocked``, a retry that is recorded."""

from __future__ import annotations

import copy
import re
import warnings
from typing import Any

import pytest

from amp_conformance.engine.resources import load_contract
from amp_conformance.engine.run import CheckResult
from tests.suite.fakes import envelope, run_against
from tests.suite.inprocess import run_against_reference as run_reference

PATCH_PATH = re.compile(r"^/amp/v1/memories/[^/]+$")


def _not_passing(results: dict[str, CheckResult]) -> list[tuple[str, str, str]]:
    return [(r.name, r.outcome, r.message) for r in results.values() if r.outcome not in ("pass", "skip")]


def _text_required(method: str, path: str, body: Any) -> tuple[int, Any] | None:
    """The upstream contract (C-20): a PATCH whose ``content`` has no ``text`` is a 422."""
    if method == "PATCH" and PATCH_PATH.match(path) and isinstance(body, dict):
        content = body.get("content")
        if isinstance(content, dict) and "text" not in content:
            return 422, envelope(
                "VALIDATION_ERROR", "content.text is required", loc=["body", "content", "text"]
            )
    return None


def test_a_server_requiring_text_in_a_content_patch_passes_the_byte_family() -> None:
    """C-20's stance: the follow-up PATCH after a huge number always sends ``text``."""
    outcome = run_against(_text_required, areas="bytes", admin=False)
    assert outcome.run is not None
    assert _not_passing(outcome.run.results) == []
    assert outcome.exit_code == 0


def _contract_without_404(method: str, path: str, body: Any) -> tuple[int, Any] | None:
    """A server of the upstream convention (403 for unknown ids) whose document declares no 404."""
    if method == "GET" and path == "/openapi.json":
        document = copy.deepcopy(load_contract("openapi.json", "amp01"))
        for item in document["paths"].values():
            for operation in item.values():
                if isinstance(operation, dict):
                    operation.get("responses", {}).pop("404", None)
        return 200, document
    return None


def test_the_openapi_check_uses_the_detected_unknown_id_convention() -> None:
    """C-01: under 403-for-unknown-ids a document without 404 differs from our contract in nothing."""
    outcome = run_against(
        _contract_without_404, {"AMP_REFERENCE_CONVENTION": "upstream"}, areas="openapi", admin=False
    )
    assert outcome.run is not None
    assert _not_passing(outcome.run.results) == []
    assert outcome.exit_code == 0
    # the same document from a server answering 404 for unknown ids still lacks what it answers
    outcome = run_against(_contract_without_404, areas="openapi", admin=False)
    assert outcome.run is not None
    assert [(name, outcome_) for name, outcome_, _ in _not_passing(outcome.run.results)] == [
        ("test_the_served_document_has_our_routes_methods_and_statuses", "warn")
    ]


def test_a_refused_status_only_archive_blocks_every_access_vector_under_its_requirement() -> None:
    """One cascade, one outcome: the vectors whose caller archives and those whose creator archives
    are all blocked under AMP-PATCH-10, none fails "PATCH answered 422" under AMP-ACL-10. A vector
    that asks no DELETE (it varies a matching rule only, issue 25) needs no archive: it passes."""
    with warnings.catch_warnings():  # the module's @check marks: no "amp" marker outside a suite run
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        from amp_conformance.amp01.checks.access.vectors import VECTORS, write_surfaces

    outcome = run_reference({"AMP_REFERENCE_FAULTS": "archive-status-only-refused"}, areas="acl", admin=False)
    assert outcome.run is not None
    matrix = [r for r in outcome.run.results.values() if r.name.startswith("test_access_matrix[")]
    assert matrix
    failed = [r for r in matrix if r.outcome == "fail"]
    # the first vector to meet the refused archive reports it, once, under the archive's requirement
    assert len(failed) == 1, [(r.name, r.message) for r in failed]
    assert tuple(getattr(failed[0], "finding_requirements", ())) == ("AMP-PATCH-10",), failed[0].message
    archives = {f"test_access_matrix[{v['name']}]" for v in VECTORS if "DELETE" in write_surfaces(v)}
    rest = {r.name: r.outcome for r in matrix if r not in failed and r.outcome != "skip"}
    assert {o for n, o in rest.items() if n in archives} == {"blocked"}, rest
    assert {o for n, o in rest.items() if n not in archives} <= {"pass"}, rest


def test_a_search_losing_matches_is_one_root_cause_and_blocks_the_filter_and_order_checks() -> None:
    """An approximate index that drops readable matching cells: "results missing" once, under
    AMP-SRCH-01; the owner, types, offset, paging and ranking checks are blocked, not failed."""
    outcome = run_reference({"AMP_REFERENCE_FAULTS": "search-approximate-index"}, areas="srch", admin=False)
    assert outcome.run is not None
    results = list(outcome.run.results.values())
    failed = [(r.name, tuple(getattr(r, "finding_requirements", ()))) for r in results if r.outcome == "fail"]
    assert failed == [("test_search_answers_the_documented_shape_with_valid_cells", ("AMP-SRCH-01",))]
    blocked = {r.name for r in results if r.outcome == "blocked"}
    assert {
        "test_owner_filter_returns_only_that_owners_cells",
        "test_types_filter_restricts_results",
        "test_offset_counts_only_results_the_caller_may_read",
        "test_paging_fields_are_truthful_on_search_and_list",
        "test_higher_decay_score_ranks_first_among_equal_texts",
    } <= blocked
    assert outcome.exit_code == 1


def _admin_run(server_token: str | None) -> list[tuple[str, str, str]]:
    """The run's non-passing results when the user gives ``--admin-token WRONG`` (admin and lifecycle
    areas; test_capabilities.py's AMP-CAP-10 POST with the token still fails on a refused token: it
    needs the same ``skip_if_admin_token_refused`` call, left to that module's owner)."""
    env = {"AMP_ADMIN_TOKEN": server_token} if server_token else {}
    extra = {"amp_admin_token": "WRONG", "amp_allow_global_effects": True}
    outcome = run_reference(env, areas="admin,lc", admin=False, extra=extra)
    assert outcome.run is not None
    return [(r.name, r.outcome, r.message) for r in outcome.run.results.values() if r.outcome != "pass"]


def test_a_wrong_admin_token_against_a_disabled_admin_route_skips_with_the_servers_reason() -> None:
    """The server has no admin token (403 ADMIN_DISABLED to every token): no MUST failure, the
    lifecycle checks skip saying the route is disabled."""
    results = _admin_run(None)
    assert [r for r in results if r[1] not in ("skip",)] == []
    assert any("ADMIN_DISABLED" in message for _, _, message in results)


def test_a_wrong_admin_token_the_server_refuses_is_a_setup_problem() -> None:
    """The server has another token: the refused token is the user's setup, a skip with the reason."""
    results = _admin_run("the-real-token")
    assert [r for r in results if r[1] not in ("skip",)] == []
    assert any("--admin-token" in message for _, _, message in results)
