"""A one-line progress display on a terminal: checks done / total, the current area, elapsed time, the
requests sent (and, during fuzzing, the fuzzer's).

Runs take minutes; a silent terminal looks hung. The line replaces pytest's per-check letters (the
summary at the end says everything they did) and is redrawn by a small thread, so it keeps ticking
during a long check such as the fuzz area. It writes to a duplicate of the terminal's descriptor
taken before any check runs, so pytest's output capturing does not swallow it. Nothing is shown when
the output is not a terminal, or at any verbosity other than the front end's default (``-q``: quiet;
``-v``: pytest's own per-check lines).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Generator
from contextlib import suppress
from typing import IO, TYPE_CHECKING, Any

import pytest

from amp_conformance.engine.marking import spec_of

if TYPE_CHECKING:
    from amp_conformance.engine.run import Run


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"


class Progress:
    """The pytest plugin. ``default_verbosity`` is the verbosity the front end runs at when the user
    asked for neither more nor less: 0 for plain pytest, -1 for the command (it runs pytest with -q)."""

    REFRESH_SECONDS = 0.25

    def __init__(self, find_run: Callable[[pytest.Config], Run | None], *, default_verbosity: int = 0):
        self.find_run = find_run
        self.default_verbosity = default_verbosity
        self.active = False
        self.total = 0
        self.done = 0
        self.bad = 0
        self.area = ""
        self.started = time.monotonic()
        self._fuzz_at_start = 0
        self._config: pytest.Config | None = None
        self._out: IO[str] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._width = 80

    # when to show ----------------------------------------------------------------------------

    def _terminal(self, config: pytest.Config) -> IO[str] | None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or config.get_verbosity() != self.default_verbosity:
            return None
        stream = getattr(getattr(reporter, "_tw", None), "_file", None)
        try:
            fileno = stream.fileno() if stream is not None else -1
        except (AttributeError, OSError, ValueError):
            return None
        if fileno < 0 or not os.isatty(fileno):
            return None
        with suppress(OSError):
            self._width = os.get_terminal_size(fileno).columns
        return os.fdopen(os.dup(fileno), "w", encoding="utf-8", errors="replace")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._start(session.config, len(session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """A parallel run's controller collects nothing: the first worker's collection gives the total."""
        self._start(node.config, len(ids))

    def _start(self, config: pytest.Config, total: int) -> None:
        if self.active or self.find_run(config) is None or not total:
            return
        self._out = self._terminal(config)
        if self._out is None:
            return
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.showfspath = False
        self._config = config
        self.active = True
        self.total = total
        self.started = time.monotonic()
        run = self.find_run(config)
        self._fuzz_at_start = run.fuzz_requests if run is not None else 0
        self._thread = threading.Thread(target=self._tick, name="amp-progress", daemon=True)
        self._thread.start()

    # what to show ----------------------------------------------------------------------------

    def line(self) -> str:
        """The text of the progress line (no control characters)."""
        run = self.find_run(self._config) if self._config is not None else None
        parts = [f"AMP {self.done}/{self.total} checks"]
        if self.area:
            parts.append(f"area {self.area}")
        if self.bad:
            parts.append(f"{self.bad} failed or errored")
        parts.append(_clock(time.monotonic() - self.started))
        sent = getattr(run, "requests_sent", None)
        if isinstance(sent, int):
            parts.append(f"{sent} requests")
        fuzzed = (run.fuzz_requests if run is not None else 0) - self._fuzz_at_start
        if self.area == "fuzz" or fuzzed:
            parts.append(f"fuzzing: {fuzzed} requests")
        return "  ".join(parts)[: max(self._width - 1, 20)]

    def _draw(self) -> None:
        with self._lock:
            if self._out is not None and self.active:
                with suppress(OSError, ValueError):
                    self._out.write("\r\x1b[2K" + self.line())
                    self._out.flush()

    def _tick(self) -> None:
        while not self._stop.wait(self.REFRESH_SECONDS):
            self._draw()

    def finish(self) -> None:
        """Stop the thread and clear the line (before pytest writes its summary)."""
        if not self.active:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        with self._lock:
            self.active = False
            if self._out is not None:
                with suppress(OSError, ValueError):
                    self._out.write("\r\x1b[2K")
                    self._out.flush()
                    self._out.close()
                self._out = None

    # pytest hooks ----------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.active:
            spec = spec_of(item)
            self.area = spec.area if spec is not None else ""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.active:
            return
        if report.failed:
            self.bad += 1
        if report.when == "teardown":
            self.done += 1
            if self.done >= self.total:
                self.finish()
            else:
                self._draw()

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> Generator[None, Any, Any]:
        """While the line is shown, pytest's per-check letter is left out (it would break the line)."""
        result = yield
        if self.active and isinstance(result, tuple) and len(result) == 3:
            return result[0], "", result[2]
        return result

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self.finish()

    def pytest_unconfigure(self) -> None:
        self.finish()
