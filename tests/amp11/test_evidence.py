"""Every v1.1 verdict names its evidence (issue 35): ``expect`` without it is refused by the v1.1
context, where v0.1's still falls back to the check's last exchange."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import pytest

from amp_conformance.amp11.channels import Rows, Value
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.engine.context import CheckContext
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import CheckFailure, Evidence, ToolError

AMP11 = Path(__file__).resolve().parents[2] / "amp_conformance" / "amp11"


def _context(kind: type[CheckContext]) -> CheckContext:
    """A context with only what a verdict reads (its evidence): no run, session or server."""
    context = kind.__new__(kind)
    context.evidence = Evidence()
    return context


def _exchange(url: str) -> Exchange:
    return Exchange("tools/call", url, {}, None)


def _names_evidence(call: ast.Call) -> bool:
    return len(call.args) >= 3 or any(k.arg == "evidence" for k in call.keywords)


def test_every_v11_expect_names_its_evidence() -> None:
    unnamed = [
        f"{path.relative_to(AMP11)}:{node.lineno}"
        for path in sorted(AMP11.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "expect"
        and not _names_evidence(node)
    ]
    assert unnamed == []


@pytest.mark.parametrize("condition", [True, False])
def test_the_v11_context_refuses_an_expect_without_evidence(condition: bool) -> None:
    context = _context(Amp11Context)
    context.evidence.exchanges.append(_exchange("mcp:amp.stats"))
    with pytest.raises(ToolError, match="names no evidence"):
        context.expect(condition, "memory_count is 2")


def test_the_v11_context_reports_the_evidence_named() -> None:
    context = _context(Amp11Context)
    judged, later = _exchange("mcp:amp.encode"), _exchange("mcp:amp.stats")
    context.evidence.exchanges += [judged, later]
    context.expect(True, "fine", None)
    with pytest.raises(CheckFailure) as caught:
        context.expect(False, "no id", Value({"status": "stored"}, judged))
    assert caught.value.exchange is judged


def test_a_context_without_explicit_evidence_still_takes_the_last_exchange() -> None:
    context = _context(CheckContext)
    last = _exchange("GET /memories")
    context.evidence.exchanges += [_exchange("POST /memories"), last]
    context.expect(True, "fine")
    with pytest.raises(CheckFailure) as caught:
        context.expect(False, "gone")
    assert caught.value.exchange is last


def test_values_and_rows_keep_their_exchange_through_a_copy() -> None:
    exchange = _exchange("mcp:amp.recall")
    rows = Rows([Value({"id": "m1"}, exchange)], exchange)
    copied = copy.deepcopy(rows)
    assert copied == [{"id": "m1"}] and copied[0] == {"id": "m1"}
    assert copied.exchange is not None and copied.exchange.url == "mcp:amp.recall"
    assert copied[0].exchange is not None and copied[0].exchange.url == "mcp:amp.recall"
