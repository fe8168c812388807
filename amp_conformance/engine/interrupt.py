"""An interrupted run (Ctrl-C, SIGTERM, ``-x``) ends in the suite's own words, on pytest's public hooks.

pytest reports an interrupt that reaches its session with a "!!! KeyboardInterrupt !!!" banner and a
``--full-trace`` hint (not an option of this tool), which would only bury the run's INCOMPLETE. So
the interrupt is caught before it reaches pytest: around collection and the test
loop (:class:`QuietInterrupt`, in the controller or a serial run; a worker's interrupt is xdist's to
pass on). What is left is skipped, and the session ends with exit status ``INTERRUPTED`` as pytest's
own handling would end it, its reports and summary written as usual. An interrupt that comes while
pytest configures (before the session starts) is held until then (``INTERRUPT_GATE``, which the
command's signal handler asks; :func:`hold_until_the_session`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from amp_conformance.engine.parallel.startup import INTERRUPT_GATE

#: The name :class:`QuietInterrupt` is registered under (once per process).
PLUGIN_NAME = "amp-conformance-quiet-interrupt"


def hold_until_the_session() -> None:
    """Hold an interrupt until :class:`QuietInterrupt` is there to catch it (the session's start)."""
    INTERRUPT_GATE.hold()


class QuietInterrupt:
    """The pytest plugin that catches an interrupt inside the session (see the module)."""

    def __init__(self) -> None:
        self.interrupted = False

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> Generator[None, Any, Any]:
        try:
            return (yield)
        except KeyboardInterrupt:
            self.interrupted = True
            return True

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        try:
            return (yield)
        except KeyboardInterrupt:
            self.interrupted = True
            return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.interrupted:
            session.exitstatus = pytest.ExitCode.INTERRUPTED


class _HeldInterrupt:
    """The plain hooks beside :class:`QuietInterrupt`'s wrappers (pytest registers one implementation
    of a hook per plugin object): the interrupt held while pytest configured is taken at the session's
    start, without raising (the session's other start hooks still run), and what it stops is skipped."""

    def __init__(self, quiet: QuietInterrupt) -> None:
        self.quiet = quiet

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        try:
            INTERRUPT_GATE.release()
        except KeyboardInterrupt:
            self.quiet.interrupted = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> bool | None:
        return True if self.quiet.interrupted else None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        return True if self.quiet.interrupted else None


def install(config: pytest.Config) -> None:
    """Register :class:`QuietInterrupt` in this process, once."""
    if not config.pluginmanager.has_plugin(PLUGIN_NAME):
        quiet = QuietInterrupt()
        config.pluginmanager.register(quiet, PLUGIN_NAME)
        config.pluginmanager.register(_HeldInterrupt(quiet), PLUGIN_NAME + "-held")
