"""The AMP v1.1 checks against the bundled reference server: clean on each channel and on both."""

from __future__ import annotations

import pytest

from tests.amp11.harness import Collector, both_channels, mcp_target, rest_server, rest_target, run_checks

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")]


def _problems(collector: Collector) -> list[str]:
    return [
        f"{o.outcome} {o.name} ({', '.join(o.requirements)}): {o.message[:300]}"
        for o in collector.results.values()
        if o.outcome in ("failed", "error")
    ]


def _cited(collector: Collector, outcome: str = "passed") -> set[str]:
    return {rid for o in collector.results.values() if o.outcome == outcome for rid in o.requirements}


def test_mcp_channel_alone_passes() -> None:
    collector = run_checks(mcp_target())
    assert not _problems(collector), "\n".join(_problems(collector))
    passed = _cited(collector)
    assert len(passed) >= 60, sorted(passed)
    assert {"AMP11-TOOLS-05", "AMP11-SCOPE-04", "AMP11-INIT-05"} <= passed
    assert collector.session is not None and collector.session.cleanup_deleted > 0


def test_rest_channel_alone_passes() -> None:
    with rest_target() as target:
        collector = run_checks(target)
    assert not _problems(collector), "\n".join(_problems(collector))
    expected = ("mcp channel", "in band", "no not_supported", "backend_error", "never queued", "--no-fuzz")
    skipped = {o.name: o.message for o in collector.results.values() if o.outcome == "skipped"}
    unexpected = {n: m for n, m in skipped.items() if not any(e in m for e in expected)}
    assert not unexpected, unexpected


def test_rest_channel_over_a_socket_passes() -> None:
    with rest_server() as target:
        collector = run_checks(target, "test_mxf or test_rest or test_scope")
    assert not _problems(collector), "\n".join(_problems(collector))
    assert len(collector.results) > 20


def test_both_channels_pass() -> None:
    with both_channels() as target:
        collector = run_checks(target)
    assert not _problems(collector), "\n".join(_problems(collector))


def test_not_found_as_an_error_is_accepted_and_mapped() -> None:
    """Conflict C1: a server raising not_found errors (instead of in-band statuses) passes too, and the
    mapping check then has something to judge."""
    collector = run_checks(mcp_target(AMP11_REFERENCE_NOT_FOUND="error"), "not_found or unknown_id or forget")
    assert not _problems(collector), "\n".join(_problems(collector))
    assert collector.results["test_not_found_mapping"].outcome == "passed"
    notes = collector.results["test_forget_unknown_id_is_not_found"].notes
    assert any("not_found error" in note for note in notes), notes


def test_list_faults_into_a_closed_pipe_ends_quietly() -> None:
    """``--list-faults | head -1`` (issue 20 §4): the reader closes the pipe early; no traceback."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "reference_server.amp11", "--list-faults"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the listing is written (as `| head` after its line)
    stderr = process.stderr.read()
    assert process.wait(timeout=60) == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
