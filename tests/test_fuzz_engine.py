"""The schemathesis-based fuzz engine (amp_conformance.fuzz) against the reference server and bad servers.

Most runs are in-process (the ASGI application is fuzzed without a socket); one runs over loopback through
uvicorn so the network path, the curl lines and the wall-time bound are exercised for real.
"""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
import socket
import subprocess
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from amp_conformance.amp01.fuzz_profile import API_PREFIX, CHECK_POLICY, PROFILE
from amp_conformance.engine.resources import load_contract
from amp_conformance.fuzz import (
    CHECK_NAMES,
    FuzzConfig,
    FuzzFinding,
    FuzzResult,
    compare_served_contract,
    fetch_served_contract,
    run_fuzz,
)
from reference_server import Settings, create_app

with warnings.catch_warnings():  # starlette's notice about httpx2 is not this project's concern
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

AGENT = {"X-AMP-Agent-ID": "amp-ct-fuzz"}
SECRET = "fuzz-secret-key-0123"
UNUSED_ORIGIN = "http://127.0.0.1:9"  # in-process runs: only used in the curl lines


def reference_app(faults: str = "", **env: str) -> Any:
    variables = {"AMP_LIFECYCLE_ENABLED": "false", **env}
    if faults:
        variables["AMP_REFERENCE_FAULTS"] = faults
    return create_app(Settings.from_env(variables))


def fuzz(app: Any = None, **overrides: Any) -> tuple[FuzzResult, float]:
    """Run the fuzzer (in-process on ``app`` unless a base_url is given) and measure its wall time."""
    options: dict[str, Any] = {
        "base_url": UNUSED_ORIGIN,
        "headers": AGENT,
        "profile": PROFILE,
        "max_examples": 10,
        "seconds": 20.0,
        "seed": 1,
        "app": app,
        "allow_global_effects": True,  # a private server: POST /lifecycle/run may be fuzzed too
    }
    options.update(overrides)
    config = FuzzConfig(**options)
    started = time.monotonic()
    result = run_fuzz(config)
    wall = time.monotonic() - started
    assert wall <= 2 * config.seconds, (
        f"wall time {wall:.1f} s exceeds twice the budget of {config.seconds} s"
    )
    assert result.seconds <= 2 * config.seconds
    return result, wall


def show(result: FuzzResult) -> str:
    lines = [
        f"{result.operations} operations, {result.examples} requests, {result.seconds} s, seed {result.seed}"
    ]
    for finding in result.findings:
        lines.append(
            f"  {finding.severity} {finding.check} {finding.requirement} {finding.operation} {finding.status}"
        )
        lines.append(f"      {finding.message[:160]}")
        lines.append(f"      {finding.curl[:240]}")
    lines += [f"  error: {error}" for error in result.errors]
    return "\n".join(lines)


def server_errors(result: FuzzResult) -> list[FuzzFinding]:
    return [f for f in result.findings if f.check == "not_a_server_error" and f.status == 500]


# --------------------------------------------------------------------------- the reference server


@pytest.mark.parametrize(
    "env",
    [{}, {"AMP_REFERENCE_CONVENTION": "upstream", "AMP_REFERENCE_ID_FORM": "bare"}],
    ids=["reference-convention", "upstream-convention"],
)
def test_no_failures_against_the_reference_server(env: dict[str, str]) -> None:
    result, _ = fuzz(reference_app(**env))
    print(show(result))
    assert result.errors == []
    assert result.failures == [], show(result)
    assert result.operations == 10
    assert result.examples > 100
    assert result.seed == 1


@pytest.mark.parametrize(
    ("fault", "via"),
    [("nonascii-session-500", "app"), ("huge-integer-500", "app"), ("deep-metadata-500", "transport")],
)
def test_each_unusual_input_fault_is_caught_as_a_500(fault: str, via: str) -> None:
    app = reference_app(fault)
    # `via="transport"`: the in-process httpx transport of starlette's TestClient is accepted too.
    target: dict[str, Any] = {"app": app} if via == "app" else {"transport": TestClient(app)._transport}
    result, _ = fuzz(headers={**AGENT, "X-AMP-API-Key": SECRET}, max_examples=5, seconds=15.0, **target)
    print(show(result))
    found = server_errors(result)
    assert found, f"{fault} was not caught:\n{show(result)}"
    finding = found[0]
    assert finding.requirement == "AMP-ERR-03"  # a 5xx is no status any route documents (MUST)
    assert finding.severity == "fail"
    assert finding.operation.endswith("/amp/v1/memories") or "{memory_id}" in finding.operation
    assert finding.curl.startswith("curl -X ") and UNUSED_ORIGIN + "/amp/v1/memories" in finding.curl
    assert finding.seed == 1
    # The configured key never appears in a reproduction; a shell variable stands in for it.
    assert all(SECRET not in f.curl and SECRET not in f.message for f in result.findings)
    assert any("$AMP_API_KEY" in f.curl for f in result.findings)


def test_framework_error_bodies_are_caught() -> None:
    result, _ = fuzz(reference_app("error-envelope-framework"), max_examples=5, seconds=15.0)
    print(show(result))
    envelope = [f for f in result.findings if f.check == "error_envelope"]
    assert envelope, show(result)
    assert all(f.severity == "fail" and f.status == 422 for f in envelope)
    assert {f.requirement for f in envelope} == {"AMP-ERR-05"}


def test_the_upstream_contract_loads_and_runs(spec_dir: Any) -> None:
    contract = json.loads((spec_dir / "upstream" / "openapi.json").read_text(encoding="utf-8"))
    result, _ = fuzz(reference_app(), contract=contract, max_examples=5, seconds=15.0)
    print(show(result))
    assert result.operations == 10
    assert result.examples > 50
    assert not [error for error in result.errors if "contract" in error], result.errors
    # The upstream contract declares no 404 (upstream convention): findings, not a crash.
    assert all(f.severity in ("fail", "warn") for f in result.findings)


# --------------------------------------------------------------------------- over loopback


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served_faulty_server() -> Iterator[str]:
    """The reference server with the huge-integer fault, served by uvicorn on a free loopback port."""
    port = free_port()
    config = uvicorn.Config(
        reference_app("huge-integer-500"), host="127.0.0.1", port=port, log_level="critical", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_over_the_network_within_the_wall_time(served_faulty_server: str) -> None:
    seconds = 12.0
    result, wall = fuzz(base_url=served_faulty_server, max_examples=5, seconds=seconds)
    print(show(result), f"\nwall {wall:.1f} s")
    assert wall <= 2 * seconds
    assert result.errors == []
    found = server_errors(result)
    assert found, show(result)
    curl = found[0].curl
    assert f"{served_faulty_server}/amp/v1/" in curl
    if shutil.which("curl"):
        # The reproduction is a working command: replayed as is, it gets the 500 again.
        command = curl + " -s -o /dev/null -w '%{http_code}' --max-time 5"
        replay = subprocess.run(
            ["bash", "-c", command], capture_output=True, text=True, timeout=15, check=False
        )
        assert replay.stdout.strip() == "500", (curl, replay.stdout, replay.stderr)


def test_served_contract_is_fetched_and_matches(served_faulty_server: str) -> None:
    document, notes = fetch_served_contract(served_faulty_server, api_prefix=API_PREFIX)
    assert document is not None, notes
    assert (
        compare_served_contract(document, load_contract("openapi.json", "amp01"), api_prefix=API_PREFIX) == []
    )


def test_a_refused_connection_is_an_error_not_an_exception() -> None:
    seconds = 5.0
    result, wall = fuzz(base_url=f"http://127.0.0.1:{free_port()}", seconds=seconds)
    print(show(result))
    assert result.errors, show(result)
    assert any("reach" in error or "refused" in error.lower() for error in result.errors), result.errors
    assert result.failures == []
    assert wall <= 2 * seconds


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    accepted: list[socket.socket] = []

    def accept() -> None:
        with suppress(OSError):
            while True:
                accepted.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for connection in accepted:
            connection.close()


def test_a_server_that_never_answers_ends_within_twice_the_budget(silent_server: str) -> None:
    # The request timeout is longer than the whole budget: the engine has to be abandoned.
    seconds = 3.0
    result, wall = fuzz(base_url=silent_server, seconds=seconds, request_timeout=10.0)
    print(show(result), f"\nwall {wall:.1f} s")
    assert result.errors, show(result)
    assert result.failures == []
    assert wall <= 2 * seconds


# --------------------------------------------------------------------------- a bad server


def bad_app() -> Starlette:
    """Non-JSON answers, HTML errors, a route that hangs, a crash on every create."""

    async def health(request: Request) -> Response:
        return HTMLResponse("<html>ok</html>")

    async def create(request: Request) -> Response:
        raise RuntimeError("crash")

    async def listing(request: Request) -> Response:
        await asyncio.sleep(30)  # hangs past the request timeout
        return JSONResponse({})

    async def read(request: Request) -> Response:
        return PlainTextResponse("nope", status_code=404)

    async def other(request: Request) -> Response:
        return Response(b"\xff\xfe not json", status_code=400, media_type="application/json")

    return Starlette(
        routes=[
            Route("/amp/v1/health", health),
            Route("/amp/v1/spec", other),
            Route("/amp/v1/memories", create, methods=["POST"]),
            Route("/amp/v1/memories", listing, methods=["GET"]),
            Route("/amp/v1/memories/{memory_id}", read, methods=["GET", "PATCH", "DELETE"]),
            Route("/amp/v1/memories/search", other, methods=["POST"]),
            Route("/amp/v1/memories/query", other, methods=["GET"]),
        ]
    )


def test_a_bad_server_gives_findings_not_exceptions() -> None:
    seconds = 8.0
    result, wall = fuzz(bad_app(), max_examples=3, seconds=seconds, request_timeout=0.5)
    print(show(result), f"\nwall {wall:.1f} s")
    checks = {finding.check for finding in result.findings}
    assert "not_a_server_error" in checks  # the crash on create
    assert "error_envelope" in checks  # plain-text 404 and a non-JSON 400
    assert "content_type_conformance" in checks or "response_schema_conformance" in checks
    assert wall <= 2 * seconds


def test_a_plain_httpx_transport_is_refused_with_an_error() -> None:
    import httpx

    result, _ = fuzz(transport=httpx.MockTransport(lambda request: httpx.Response(200)), seconds=5.0)
    assert result.errors and "transport" in result.errors[0]
    assert result.findings == []


# --------------------------------------------------------------------------- pure functions


def test_every_schemathesis_check_has_a_policy() -> None:
    from schemathesis.checks import CHECKS, load_all_checks

    load_all_checks()
    builtin = {name for name in CHECKS.get_all_names() if not name.startswith("amp_")}
    assert builtin <= set(CHECK_POLICY), builtin - set(CHECK_POLICY)
    assert {severity for severity, _, _ in CHECK_POLICY.values()} == {"fail", "warn", "off"}
    assert set(CHECK_POLICY) <= set(CHECK_NAMES)


def test_compare_served_contract_reports_routes_methods_and_statuses() -> None:
    ours = load_contract("openapi.json", "amp01")
    assert compare_served_contract(ours, ours, api_prefix=API_PREFIX) == []
    served = copy.deepcopy(ours)
    del served["paths"]["/amp/v1/memories/search"]
    del served["paths"]["/amp/v1/memories/{memory_id}"]["delete"]
    del served["paths"]["/amp/v1/memories"]["post"]["responses"]["413"]
    served["paths"]["/amp/v1/memories"]["post"]["responses"]["400"] = {"description": "bad"}
    served["paths"]["/amp/v1/extra"] = {"get": {"responses": {"200": {"description": "ok"}}}}
    warnings = compare_served_contract(served, ours, api_prefix=API_PREFIX)
    text = "\n".join(warnings)
    assert "route /amp/v1/memories/search (POST) is missing from the served document" in text
    assert "DELETE /amp/v1/memories/{} is missing from the served document" in text
    assert "POST /amp/v1/memories: statuses 413 are not declared by the server" in text
    assert "POST /amp/v1/memories: statuses 400 are declared only by the server" in text
    assert "route /amp/v1/extra (GET) is served but not in our contract" in text
    assert len(warnings) == 5


def test_compare_served_contract_resolves_a_server_prefix() -> None:
    ours = load_contract("openapi.json", "amp01")
    served = copy.deepcopy(ours)
    served["servers"] = [{"url": "http://example.test/amp/v1"}]
    served["paths"] = {
        path.removeprefix("/amp/v1").replace("{memory_id}", "{id}"): item
        for path, item in ours["paths"].items()
    }
    assert compare_served_contract(served, ours, api_prefix=API_PREFIX) == []


def test_store_wide_operations_are_left_out_unless_allowed() -> None:
    result, _ = fuzz(reference_app(), allow_global_effects=False, max_examples=2, seconds=8.0)
    assert result.operations == 9
    assert result.failures == [], show(result)


def test_an_unusable_contract_is_an_error() -> None:
    result, _ = fuzz(reference_app(), contract={"info": {"title": "no version"}, "paths": {}}, seconds=3.0)
    assert result.findings == []
    assert result.errors and "contract" in result.errors[0], result.errors


# --------------------------------------------------------------------------- the run's request count


def test_the_runs_request_count_includes_the_fuzzers_requests() -> None:
    """Issue 21 §3: schemathesis sends through its own client; its requests count in run.requests and
    in the fuzz check that ran it (they were missing from the JSON report)."""
    from tests.suite.inprocess import run_against_reference

    budget = {"amp_fuzz_examples": 3, "amp_fuzz_seconds": 6.0, "amp_seed": 7}
    outcome = run_against_reference({}, areas="fuzz", fuzz=True, extra=budget)
    assert outcome.run is not None
    fuzzed = outcome.run.cache["fuzz"].examples
    assert fuzzed > 0
    counted = sum(result.requests or 0 for result in outcome.run.results.values())
    assert counted >= fuzzed
    assert outcome.run.requests_sent >= fuzzed
