"""An interrupted run (Ctrl-C, SIGTERM, ``-x``) ends in the suite's own words, on pytest's public hooks.

pytest reports an interrupt that reaches its session with a "!!! KeyboardInterrupt !!!" banner and a
``--full-trace`` hint (not an option of this tool), which would only bury the run's INCOMPLETE. So
the interrupt is caught before it reaches pytest: around the session's start, collection and test
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
    def pytest_sessionstart(self, session: pytest.Session) -> Generator[None, None, None]:
        try:
            yield
        except KeyboardInterrupt:
            self.interrupted = True

    @pytest.hookimpl(tryfirst=True, specname="pytest_sessionstart")
    def _release_held(self, session: pytest.Session) -> None:
        INTERRUPT_GATE.release()  # an interrupt held while pytest configured is raised here, and caught

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> Generator[None, Any, Any]:
        try:
            return (yield)
        except KeyboardInterrupt:
            self.interrupted = True
            return True

    @pytest.hookimpl(tryfirst=True, specname="pytest_collection")
    def _skip_collection(self, session: pytest.Session) -> bool | None:
        return True if self.interrupted else None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        try:
            return (yield)
        except KeyboardInterrupt:
            self.interrupted = True
            return True

    @pytest.hookimpl(tryfirst=True, specname="pytest_runtestloop")
    def _skip_loop(self, session: pytest.Session) -> bool | None:
        return True if self.interrupted else None

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.interrupted:
            session.exitstatus = pytest.ExitCode.INTERRUPTED


def install(config: pytest.Config) -> None:
    """Register :class:`QuietInterrupt` in this process, once."""
    if not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(QuietInterrupt(), PLUGIN_NAME)
