"""Requests a run does not send twice: the open routes' GETs the session sent itself (the preflight's
``GET /health``, ``GET /spec``) are the ones the checks judge, and the cell steps' read after the
refused PATCHes is the timestamp walk's first read. Each with its fallback: a session that did not send
them (a parallel run's worker) lets the checks send their own, to the same verdicts."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from amp_conformance.amp01.session import Amp01Session
from amp_conformance.cli import run_suite
from amp_conformance.engine.inprocess import asgi_client
from amp_conformance.engine.verdict import CheckResult
from reference_server import Settings, create_app
from tests.suite.inprocess import BASE_URL

OPEN_ROUTE_CHECKS = (
    "test_health_reports_ok_and_the_protocol_version",
    "test_health_needs_no_identity_and_answers_json",
    "test_spec_and_health_agree_on_the_version",
    "test_spec_reports_version_and_capabilities",
    "test_health_and_spec_stay_open",
)
CELL_STEP_CHECKS = (
    "test_status_is_one_of_the_four_lifecycle_states",
    "test_importance_and_confidence_are_in_the_unit_interval",
    "test_every_timestamp_is_utc",
    "test_timestamps_are_consistent_and_move_forward",
)


def _run(areas: str, keyword: str | None = None) -> tuple[dict[str, CheckResult], Counter[tuple[str, str]]]:
    """The suite over ``areas`` against the reference server, and what the server was sent: (method,
    path) counts, anonymous requests marked by a ``-`` before the method."""
    seen: Counter[tuple[str, str]] = Counter()
    app = create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false"}))

    async def counting(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            named = any(name.lower() == b"x-amp-agent-id" for name, _ in scope.get("headers", []))
            seen[(scope["method"] if named else "-" + scope["method"], str(scope["path"]))] += 1
        await app(scope, receive, send)

    values: dict[str, Any] = {"amp_base_url": BASE_URL, "amp_only": areas, "amp_no_fuzz": True}
    values |= {"amp_timeout": 10.0, "keyword": keyword}
    with asgi_client(counting, BASE_URL) as http:
        outcome = run_suite(values, http=http, quiet=True)
    assert outcome.run is not None
    return {r.name: r for r in outcome.run.results.values()}, seen


def _verdicts(results: dict[str, CheckResult]) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {name: (r.outcome.value, r.finding_requirements) for name, r in results.items()}


def _open_routes(monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[dict[str, CheckResult], int, int]:
    if monkeypatch is not None:
        monkeypatch.setattr(Amp01Session, "open_route", lambda self, path: None)
    results, seen = _run("health,cap,auth", " or ".join(OPEN_ROUTE_CHECKS))
    assert sorted(results) == sorted(OPEN_ROUTE_CHECKS)
    assert all(r.outcome == "pass" for r in results.values()), {n: r.message for n, r in results.items()}
    return results, seen[("-GET", "/amp/v1/health")], seen[("-GET", "/amp/v1/spec")]


def test_the_open_route_checks_judge_the_gets_the_run_sent_itself() -> None:
    results, health, spec = _open_routes()
    assert (health, spec) == (1, 1)  # the preflight's GET /health, the session's GET /spec
    notes = [n for r in results.values() for n in r.notes if "the request the run sent itself" in n]
    assert len(notes) == 2, [r.notes for r in results.values()]


def test_without_the_runs_own_gets_the_checks_send_theirs_to_the_same_verdicts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fallback: the session has none of them (as a parallel run's worker), each is sent once by
    the first check asking, and every check reaches the verdict it reaches on the session's."""
    shared, _, _ = _open_routes()
    own, health, spec = _open_routes(monkeypatch)
    assert (health, spec) == (2, 2)
    assert _verdicts(own) == _verdicts(shared)
    assert not any("the request the run sent itself" in n for r in own.values() for n in r.notes)


def test_the_timestamp_walk_starts_on_the_read_after_the_refused_patches() -> None:
    results, seen = _run("cell", " or ".join(CELL_STEP_CHECKS))
    assert sorted(results) == sorted(CELL_STEP_CHECKS)
    assert all(r.outcome == "pass" for r in results.values()), {n: r.message for n, r in results.items()}
    walk = [
        e for e in results["test_timestamps_are_consistent_and_move_forward"].exchanges if e.method == "GET"
    ]
    refused = [
        e for e in results["test_status_is_one_of_the_four_lifecycle_states"].exchanges if e.method == "GET"
    ]
    assert refused[0] is walk[0] and len(walk) == 2  # WALK's two reads, the first that one
    reads = [path for (method, path), count in seen.items() if method == "GET" for _ in range(count)]
    assert reads.count(walk[0].url.removeprefix(BASE_URL)) == 2
