"""An interrupt is caught on pytest's public hooks (engine.interrupt, issue 35): no banner, exit 2."""

from __future__ import annotations

import pytest

from amp_conformance.cli import run_suite
from amp_conformance.engine.inprocess import asgi_client
from amp_conformance.engine.parallel import INTERRUPT_GATE
from reference_server import Settings, create_app
from tests.ci.test_interrupt import InterruptAfter


class InterruptAtCollection:
    """Interrupts as Ctrl-C would while the checks are collected."""

    def pytest_collection_modifyitems(self) -> None:
        raise KeyboardInterrupt


@pytest.mark.parametrize("plugin", [InterruptAfter(2), InterruptAtCollection()], ids=["check", "collection"])
def test_an_interrupt_ends_the_run_incomplete_without_pytests_banner(
    plugin: object, capfd: pytest.CaptureFixture[str]
) -> None:
    values = {"amp_base_url": "http://testserver", "amp_only": "read", "amp_no_fuzz": True}
    app = create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false"}))
    with asgi_client(app, "http://testserver") as http:
        outcome = run_suite(values, http=http, plugins=[plugin])
    out, err = capfd.readouterr()
    assert outcome.exit_code == 2 and outcome.run is not None and outcome.run.interrupted
    assert "KeyboardInterrupt" not in out + err and "full-trace" not in out + err, out + err
    assert "!!!" not in out + err, out + err
    assert "INCOMPLETE" in out + err, out[-2000:]


def test_an_interrupt_held_while_pytest_configures_is_raised_in_the_session() -> None:
    """The command's handler asks the gate: a signal before the session starts waits for it."""
    INTERRUPT_GATE.hold()
    assert INTERRUPT_GATE.defer(2)
    with pytest.raises(KeyboardInterrupt):
        INTERRUPT_GATE.release()
    assert not INTERRUPT_GATE.defer(2)


class HeldWhileConfiguring:
    """A signal the command's handler held while pytest configured (the gate holding, one deferred)."""

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self) -> None:
        INTERRUPT_GATE.hold()
        INTERRUPT_GATE.defer(2)


def test_a_held_interrupt_stops_the_run_at_the_sessions_start(capfd: pytest.CaptureFixture[str]) -> None:
    """The held signal is taken when the session starts: no check runs (the plain hooks beside the
    wrappers are registered, not ignored by pytest), the run ends INCOMPLETE, and the gate is empty."""
    values = {"amp_base_url": "http://testserver", "amp_only": "read", "amp_no_fuzz": True}
    app = create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false"}))
    with asgi_client(app, "http://testserver") as http:
        outcome = run_suite(values, http=http, plugins=[HeldWhileConfiguring()])
    out, err = capfd.readouterr()
    assert outcome.exit_code == 2 and outcome.run is not None and outcome.run.interrupted, out[-2000:]
    assert outcome.run.results == {}, sorted(outcome.run.results)
    assert "Traceback" not in out + err and "!!!" not in out + err, out + err
    assert not INTERRUPT_GATE.defer(2)
