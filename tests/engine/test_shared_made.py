"""``CheckContext.shared_made``: whether a shared step exists (made without a problem), so a check that
may use it but must not make it can ask first (issue 25: the ranking check and the shared passes)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from amp_conformance.engine.context import CheckContext
from amp_conformance.engine.outcomes import Evidence, ToolError
from amp_conformance.engine.spec import CheckSpec
from amp_conformance.engine.vocabulary import Level


def _context() -> CheckContext:
    context = CheckContext.__new__(CheckContext)  # no run, session or protocol: only what shared needs
    context.run = SimpleNamespace(cache={})  # type: ignore[assignment]
    context.evidence = Evidence()
    context.check_spec = CheckSpec(requirements=("AMP-LC-01",), level=Level.MUST, area="lc", title="a check")
    return context


def test_a_step_is_made_only_once_it_was_asked_for() -> None:
    context = _context()
    assert not context.shared_made("cells")
    assert context.shared("cells", lambda _: {"id": "x"}) == {"id": "x"}
    assert context.shared_made("cells")
    assert not context.shared_made("other cells")


def test_a_step_that_broke_is_not_made() -> None:
    context = _context()

    def broken(_: object) -> None:
        raise ToolError("the server went away")

    with pytest.raises(ToolError):
        context.shared("cells", broken)
    assert not context.shared_made("cells")
