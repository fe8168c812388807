"""A parallel run's controller renders each check's exchanges as the result arrives (report.prerender):
the report then shows them exactly as it would have rendered them at the end, and an exchange whose
curl line may write a body file beside the report is left for the end."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.replay import ReplayContext
from amp_conformance.engine.report import PRERENDERED_BODY_BYTES, _ExchangeRenderer, prerender


def test_prerendered_exchanges_are_the_reports_and_large_bodies_wait(tmp_path: Path) -> None:
    replay = ReplayContext.for_run("admin-secret-token", {"agent-a": "key-of-a"}, tmp_path / "r.json")
    small = Exchange(
        "POST",
        "http://h/amp/v1/memories",
        {"X-AMP-Agent-ID": "agent-a", "X-API-Key": "key-of-a"},
        b'{"text": "admin-secret-token"}',
        status=201,
        replay=replay,
    )
    small.response_body = b'{"id": "mem_1"}'
    large = Exchange(
        "POST",
        "http://h/amp/v1/memories",
        {},
        b"\x00" * (PRERENDERED_BODY_BYTES * 8),
        status=413,
        replay=replay,
    )
    run: Any = SimpleNamespace(rendered_exchanges={})
    prerender(run, SimpleNamespace(exchanges=[small, large]))  # type: ignore[arg-type]
    assert list(run.rendered_exchanges.values()) == [small.as_dict()]
    assert "admin-secret-token" not in str(list(run.rendered_exchanges.values()))
    assert not (tmp_path / "r.bodies").exists(), "no body file before the report is written"
    rendered = _ExchangeRenderer(run.rendered_exchanges)
    assert rendered(small) is next(iter(run.rendered_exchanges.values()))
    assert rendered(large) == large.as_dict()
