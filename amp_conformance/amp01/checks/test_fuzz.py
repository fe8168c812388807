"""OpenAPI-driven fuzzing (the ``fuzz`` area): what nobody thought to write down.

One schemathesis + hypothesis run per suite run (see :mod:`amp_conformance.fuzz`), shared by the
checks below; each check judges one kind of finding. Generated owner ids are pinned to the run's own,
and the cells the fuzzer creates are cleaned up with the rest.
"""

from __future__ import annotations

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.fuzz_profile import profile_for
from amp_conformance.fuzz import FuzzConfig, FuzzFinding, FuzzResult, judged_run, load_openapi, run_fuzz

SERVER_ERRORS = {"not_a_server_error"}
ENVELOPE = {"error_envelope"}
CONTRACT = {
    "status_code_conformance",
    "response_schema_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "ensure_resource_availability",
}


def fuzz_result(amp: Amp01Context) -> FuzzResult:
    """Run the fuzzer once per suite run (the first fuzz check pays for it)."""
    cached = amp.run.cache.get("fuzz")
    if cached is None:
        options = amp.run.options
        agent = amp.agent("a")
        config = FuzzConfig(
            base_url=amp.session.connection.root,
            headers=agent.headers(),
            profile=profile_for(amp.conventions),
            contract=load_openapi(options.openapi, options.timeout),
            max_examples=options.fuzz_examples,
            seconds=options.fuzz_seconds,
            seed=options.seed,
            request_timeout=options.timeout,
            app=amp.session.connection.app,
            allow_global_effects=amp.session.options.allow_global_effects,
            owner_id=amp.owner(),
            on_requests=amp.run.note_fuzz_requests,
            limiter=amp.session.connection.limiter,
        )
        cached = run_fuzz(config)
        # schemathesis sends through its own client: count its requests where the run's count comes from
        # (the session's connection), so run.requests and the per-check counts include them
        amp.session.connection.requests += cached.examples
        for cell_id in cached.created:
            amp.remember(cell_id, as_agent="a")
        amp.run.cache["fuzz"] = cached
    return judged_run(amp, cached, "operations")


def _judge(amp: Amp01Context, checks: set[str], what: str) -> None:
    result = fuzz_result(amp)
    failures = [f for f in result.failures if f.check in checks]
    for finding in (f for f in result.warnings if f.check in checks):
        amp.warn(_describe(finding), requirements=tuple(finding.requirement.split("/")))
    if failures:
        # each finding names the rule it breaks; one rule for all of them is the finding's requirement
        broken = sorted({f.requirement.split("/")[0] for f in failures})
        amp.fail(
            f"{what}: {len(failures)} finding(s)\n" + "\n".join(_describe(f) for f in failures),
            expected="no finding",
            requirement=broken[0] if len(broken) == 1 else None,
        )


def _describe(finding: FuzzFinding) -> str:
    return (
        f"- {finding.requirement} {finding.operation}: {finding.message} (status {finding.status}, "
        f"seed {finding.seed})\n    reproduce: {finding.curl}"
    )


@check("AMP-ERR-07", "AMP-ERR-03", area="fuzz")
def test_fuzzing_provokes_no_server_error(amp: Amp01Context) -> None:
    """No generated request, valid or invalid, gets a 5xx."""
    _judge(amp, SERVER_ERRORS, "the server answered generated requests with a 5xx")


@check("AMP-ERR-01", "AMP-ERR-02", "AMP-ERR-04", "AMP-ERR-05", area="fuzz")
def test_fuzzed_errors_use_the_envelope(amp: Amp01Context) -> None:
    """Every 4xx from an AMP route, for any generated request, uses the AMP error envelope."""
    _judge(amp, ENVELOPE, "4xx answers without the AMP error envelope")


@check("AMP-ERR-03", "AMP-CELL-01", "AMP-CRE-09", "AMP-ERR-06", area="fuzz")
def test_fuzzed_responses_follow_the_contract(amp: Amp01Context) -> None:
    """Generated requests get declared statuses, JSON bodies matching their schemas, required headers."""
    _judge(amp, CONTRACT, "responses that break the contract")
