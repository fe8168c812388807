"""Issue 20: v1.1 verdicts that never mislead, each shown on a fake server written from the spec.

For each behaviour: zero false MUST failures, the real divergence (if any) reported once under its own
requirement, and cascades ``blocked`` under the root cause."""

from __future__ import annotations

from typing import Any

import pytest

from tests.amp11.fakes import fake_rest
from tests.amp11.harness import Collector, run_checks

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")]


def failed(collector: Collector) -> dict[str, tuple[tuple[str, ...], str]]:
    return {
        o.name: (o.requirements, o.message[:300])
        for o in collector.results.values()
        if o.outcome in ("failed", "error")
    }


def accepts_top_k_zero(method: str, path: str, body: Any) -> Any:
    """A server that takes ``top_k: 0`` as "the default" (breaks ``minimum: 1``, AMP11-REC-09)."""
    if path == "/v1/memories/recall" and isinstance(body, dict) and body.get("top_k") == 0:
        return {k: v for k, v in body.items() if k != "top_k"}
    return body


def test_an_accepted_invalid_input_is_one_finding_under_its_own_requirement() -> None:
    with fake_rest(request=accepts_top_k_zero) as target:
        collector = run_checks(target)
    bad = failed(collector)
    assert set(bad) == {"test_malformed_recall_inputs_are_refused"}, bad
    assert "top_k 0" in bad["test_malformed_recall_inputs_are_refused"][1]
    results = collector.results
    for name in (
        "test_invalid_request_mapping",
        "test_rest_errors_carry_the_amp_code",
        "test_codes_and_transport_always_agree",
        "test_errors_do_not_break_the_session",
        "test_error_payloads_are_amp_error_data",
    ):
        assert results[name].outcome == "passed", (name, results[name].message)
        assert any("judged under AMP11-REC-09" in n for n in results[name].notes), name
