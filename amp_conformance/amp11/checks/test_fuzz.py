"""Fuzzing AMP v1.1 from its contracts (the ``fuzz`` area): every verb over MCP and REST, from its schema.

One fuzz run per channel per suite run (:mod:`amp_conformance.amp11.fuzz`), shared by the checks below;
each check judges one kind of finding. Every finding shows the shrunk arguments and the frames (or the
HTTP exchange) behind it; with ``--json`` each is also written as a replayable transcript next to the
report. The REST channel is also fuzzed from the OpenAPI file with schemathesis (``test_rest_openapi_*``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from amp_conformance.amp11 import catalogue
from amp_conformance.amp11.channels import MCP, REST
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.amp11.fuzz import Finding, FuzzRun, VerbFuzzer
from amp_conformance.amp11.rest_fuzz import PROFILE, register_ndjson, with_links
from amp_conformance.engine.inprocess import transport_of
from amp_conformance.engine.marking import check
from amp_conformance.engine.outcomes import ToolError
from amp_conformance.fuzz import FuzzConfig, FuzzFinding, FuzzResult, judged_run, load_openapi, run_fuzz

SCHEMA_ROWS = tuple(f"AMP11-SCHEMA-0{n}" for n in range(1, 9))
INVALID_ROWS = (
    "AMP11-REC-09",
    "AMP11-ENC-04",
    "AMP11-FGT-03",
    "AMP11-PIN-04",
    "AMP11-CONS-03",
    "AMP11-EXP-06",
    "AMP11-IMP-11",
    "AMP11-ENC-09",
    "AMP11-REC-10",
)
MAX_SHOWN = 8


def fuzz_run(amp: Amp11Context, channel: str) -> FuzzRun:
    """The channel's fuzz run, made once per suite run (the first check of the channel pays for it)."""
    amp.require(channel)
    key = f"amp11-fuzz-{channel}"
    cached = amp.run.cache.get(key)
    if cached is None:
        options = amp.run.options
        seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**31)
        targeted = len(amp.channels) or 1
        fuzzer = VerbFuzzer(
            amp.session,
            channel,
            seed=seed,
            examples=options.fuzz_examples,
            seconds=options.fuzz_seconds / targeted,
            scope=lambda: amp.scope("fuzz"),
            on_requests=amp.run.note_fuzz_requests,
        )
        cached = fuzzer.fuzz()
        _write_transcripts(amp, cached)
        amp.run.cache[key] = cached
    run: FuzzRun = cached
    if run.unrouted:
        amp.note(f"no REST route for the Full verbs {', '.join(run.unrouted)} (a Core server): not fuzzed")
    amp.note(
        f"fuzzed {len(run.verbs)} verbs over {channel} with {run.examples} requests in {run.seconds:.1f} s "
        f"(seed {run.seed}; rerun with --seed {run.seed})"
    )
    for error in run.errors:
        amp.note(f"fuzz tool problem: {error}")
    if run.examples == 0:
        raise ToolError(f"the {channel} fuzz run sent no request: " + "; ".join(run.errors or ["no verb"]))
    return run


def _write_transcripts(amp: Amp11Context, run: FuzzRun) -> None:
    """One JSON-lines transcript per finding, in ``<report>.fuzz/`` next to the JSON report."""
    report = amp.run.options.json_path
    if report is None or str(report) == "-" or not run.findings:
        return
    folder = Path(str(report) + ".fuzz")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for number, finding in enumerate(run.findings, start=1):
            path = folder / f"{run.channel}-{finding.verb}-{number}.jsonl"
            header = {
                "seed": run.seed,
                "requirement": finding.requirement,
                "message": finding.message,
                "arguments": finding.arguments,
                "tools_call": finding.frame(),
            }
            lines = [header, *finding.transcript()]
            path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), "utf-8")
            finding.message += f" (transcript: {path})"
    except OSError as exc:
        amp.note(f"cannot write the fuzz transcripts to {folder}: {exc}")


def _level(requirement: str | None) -> str | None:
    if requirement is None:
        return None
    row = catalogue.catalogue().get(requirement)
    return str(row.level) if row is not None else None


def _judge(amp: Amp11Context, channel: str, kind: str, what: str) -> None:
    run = fuzz_run(amp, channel)
    findings = [f for f in run.findings if f.kind == kind]
    failures: list[Finding] = []
    for finding in findings:
        level = _level(finding.requirement)
        if level == "MUST":
            failures.append(finding)
        elif finding.requirement is not None:
            amp.warn(finding.describe(), finding.exchange, requirement=finding.requirement)
        else:
            amp.note(f"schema-invalid, accepted, no catalogue row asks for a refusal: {finding.describe()}")
    if not failures:
        return
    for finding in failures[:MAX_SHOWN]:
        if finding.exchange is not None and finding.exchange not in amp.evidence.exchanges:
            amp.evidence.exchanges.append(finding.exchange)
    broken = sorted({f.requirement for f in failures if f.requirement})
    shown = "\n".join(f.describe() for f in failures[:MAX_SHOWN])
    more = f"\n(and {len(failures) - MAX_SHOWN} more)" if len(failures) > MAX_SHOWN else ""
    amp.fail(
        f"{what} over {channel}: {len(failures)} finding(s) (seed {run.seed})\n{shown}{more}",
        failures[0].exchange,
        expected="no finding",
        requirement=broken[0] if len(broken) == 1 else None,
    )


@check("AMP11-ERR-05", "AMP11-ERR-07", "AMP11-INIT-07", *SCHEMA_ROWS, area="fuzz")
def test_fuzzed_valid_arguments_over_mcp(amp: Amp11Context) -> None:
    """Schema-valid tool arguments get a schema-valid result or a documented AMP error (never -32603)."""
    _judge(amp, MCP, "valid", "schema-valid arguments")


@check("AMP11-ERR-01", "AMP11-ERR-05", "AMP11-ERR-07", *INVALID_ROWS, area="fuzz")
def test_fuzzed_invalid_arguments_over_mcp(amp: Amp11Context) -> None:
    """Schema-invalid tool arguments (one member each) are refused with invalid_request (-32602)."""
    _judge(amp, MCP, "invalid", "schema-invalid arguments")


@check("AMP11-REST-10", "AMP11-REST-11", "AMP11-ERR-06", "AMP11-ERR-07", area="fuzz")
def test_fuzzed_valid_arguments_over_rest(amp: Amp11Context) -> None:
    """Schema-valid verb requests get a documented status and a schema-valid body, never a bare 5xx."""
    _judge(amp, REST, "valid", "schema-valid requests")


@check("AMP11-ERR-01", "AMP11-ERR-06", "AMP11-ERR-07", "AMP11-REST-11", *INVALID_ROWS, area="fuzz")
def test_fuzzed_invalid_arguments_over_rest(amp: Amp11Context) -> None:
    """Schema-invalid verb requests (one member each) are refused with 400 invalid_request."""
    _judge(amp, REST, "invalid", "schema-invalid requests")


# -- the REST channel from the OpenAPI file (schemathesis, through the protocol-neutral engine) -----------

OPENAPI_SERVER_ERRORS = {"not_a_server_error", "transport_error"}
FULL_ROUTES = {
    "amp.consolidate": ("/v1/memories/consolidate", "post"),
    "amp.pin": ("/v1/memories/{id}/pin", "put"),
    "amp.export": ("/v1/memories/export", "post"),
    "amp.import": ("/v1/memories/import", "post"),
}
OPENAPI_CONTRACT = {
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "error_envelope",
    "positive_data_acceptance",
    "negative_data_rejection",
    "unsupported_method",
}


def _openapi(amp: Amp11Context) -> dict[str, Any] | None:
    """``--openapi`` (a path or URL), with the encode -> forget / pin links added; None: the bundled one."""
    document = load_openapi(amp.run.options.openapi, amp.run.options.timeout)
    return with_links(document) if document is not None else None


def openapi_fuzz(amp: Amp11Context) -> FuzzResult:
    """The schemathesis run over the REST channel, once per suite run."""
    amp.require(REST)
    cached = amp.run.cache.get("amp11-fuzz-openapi")
    if cached is None:
        options = amp.run.options
        target = amp.session.target
        assert target.base_url is not None
        owner = amp.scope("fuzz")["agent_id"]
        register_ndjson()
        contract = _openapi(amp) or dict(PROFILE.load_contract())
        unrouted = fuzz_run(amp, REST).unrouted  # a Core server's missing Full routes are not fuzzed
        for verb in unrouted:
            path, method = FULL_ROUTES[verb]
            contract.get("paths", {}).get(path, {}).pop(method, None)
        transport = transport_of(target.http)
        config = FuzzConfig(
            base_url=target.base_url,
            headers={},
            profile=PROFILE,
            contract=contract,
            max_examples=options.fuzz_examples,
            seconds=options.fuzz_seconds / (len(amp.channels) + 1),
            seed=options.seed,
            request_timeout=options.timeout,
            transport=transport,
            owner_id=owner,
            on_requests=amp.run.note_fuzz_requests,
            limiter=amp.session.connection().limiter,
        )
        cached = run_fuzz(config)
        # schemathesis sends through its own client: its requests count where the run's count comes from
        amp.session.connection().requests += cached.examples
        for memory_id in cached.created:
            amp.session.remember(REST, {"scope": {"agent_id": owner}, "id": memory_id})
        amp.run.cache["amp11-fuzz-openapi"] = cached
    return judged_run(amp, cached, "OpenAPI operations")


def _describe_openapi(finding: FuzzFinding) -> str:
    return (
        f"- {finding.requirement} {finding.operation}: {finding.message} (status {finding.status}, "
        f"seed {finding.seed})\n    reproduce: {finding.curl}"
    )


def _judge_openapi(amp: Amp11Context, checks: set[str], what: str) -> None:
    result = openapi_fuzz(amp)
    failures = [f for f in result.failures if f.check in checks]
    for finding in (f for f in result.warnings if f.check in checks):
        amp.warn(_describe_openapi(finding), requirement=finding.requirement)
    if failures:
        broken = sorted({f.requirement for f in failures})
        amp.fail(
            f"{what}: {len(failures)} finding(s)\n" + "\n".join(_describe_openapi(f) for f in failures),
            expected="no finding",
            requirement=broken[0] if len(broken) == 1 else None,
        )


@check("AMP11-REST-11", area="fuzz")
def test_rest_openapi_fuzzing_provokes_no_server_error(amp: Amp11Context) -> None:
    """No request generated from the OpenAPI file, valid or invalid, gets an undocumented 5xx."""
    _judge_openapi(amp, OPENAPI_SERVER_ERRORS, "undocumented 5xx answers to generated requests")


@check("AMP11-REST-10", "AMP11-ERR-06", area="fuzz")
def test_rest_openapi_fuzzed_responses_follow_the_contract(amp: Amp11Context) -> None:
    """Generated requests get documented statuses and bodies matching their schemas (NDJSON export
    bodies included); every 4xx carries the AMP error code and a message."""
    _judge_openapi(amp, OPENAPI_CONTRACT, "responses that break the OpenAPI contract")
