"""The briefing: what every worker starts from, settled by the controller's preflight while the
workers start, and a worker's wait for it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

#: Where a worker finds the path of the briefing file in its ``workerinput``.
BRIEFING_PATH_KEY = "amp_briefing_path"
#: Where the briefing names the file its second part (what the protocol detects) is posted to.
DETAIL_PATH_KEY = "amp_briefing_detail_path"


class Briefing:
    """What every worker starts from, settled by the controller's preflight *while the workers start*.

    The preflight asks the server several things one after the other (a second or more against a
    distant server) and the workers take a second or more of imports to start: done in turn, one
    waits for the other. So the controller starts the workers at once with only the path of a file
    in their ``workerinput``, runs the preflight in a thread, and writes its outcome there (whole, by
    an atomic rename); each worker reads it once it has collected, before it takes work. Where no
    temporary folder can be made, the briefing goes in ``workerinput`` as before (the preflight first)."""

    def __init__(self) -> None:
        self.folder: str | None = None
        self._thread: threading.Thread | None = None
        self._outcome: dict[str, Any] | None = None

    @property
    def path(self) -> str | None:
        return None if self.folder is None else os.path.join(self.folder, "briefing.json")

    @property
    def detail_path(self) -> str | None:
        """Where the second part goes: what the protocol detects (:meth:`start`'s ``detail``)."""
        return None if self.folder is None else os.path.join(self.folder, "briefing-detail.json")

    def open(self) -> bool:
        """Make the folder the briefing will be written to; False when none can be made."""
        try:
            self.folder = tempfile.mkdtemp(prefix="amp-conformance-briefing-")
        except OSError:
            self.folder = None
        return self.folder is not None

    def start(
        self, settle: Callable[[], dict[str, Any]], detail: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        """Run ``settle`` (the preflight) in a thread and post its outcome; then, when it found no
        problem, ``detail`` (what the protocol detects once for all, a few requests more), posted as
        a second part that the outcome names (``DETAIL_PATH_KEY``): the workers start on the first
        and read the second when a check first needs it (``ProtocolSession.adopt_briefing_later``)."""

        def work() -> None:
            try:
                outcome = settle()
            except BaseException as exc:  # the thread ends with an outcome, never a traceback
                outcome = {"amp_preflight_problem": f"the preflight stopped: {type(exc).__name__}: {exc}"}
            if detail is None or outcome.get("amp_preflight_problem"):
                self._outcome = outcome
                self._post(self.path, outcome)
                return
            self._post(self.path, {**outcome, DETAIL_PATH_KEY: self.detail_path})
            try:
                found = detail()
            except BaseException:
                found = {}
            self._post(self.detail_path, found)
            self._outcome = {**outcome, "amp_protocol": found}

        self._thread = threading.Thread(target=work, name="amp-preflight", daemon=True)
        self._thread.start()

    def _post(self, path: str | None, outcome: dict[str, Any]) -> None:
        if path is None:
            return
        with contextlib.suppress(OSError):  # a worker that cannot read it stops with the reason
            with open(f"{path}.part", "w", encoding="utf-8") as handle:
                json.dump(outcome, handle)
            os.replace(f"{path}.part", path)

    def outcome(self, timeout: float | None) -> dict[str, Any] | None:
        """The preflight's outcome once it is known (None if it is not within ``timeout``)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._outcome

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def await_briefing(path: str, timeout: float) -> dict[str, Any]:
    """A worker's wait for the controller's briefing file: its content, or a preflight problem saying
    why there is none (the worker then runs nothing, as after a failed preflight)."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            with open(path, encoding="utf-8") as handle:
                briefing = json.load(handle)
            if isinstance(briefing, dict):
                return briefing
            return {"amp_preflight_problem": "the controller's briefing is not a JSON object"}
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            return {"amp_preflight_problem": f"cannot read the controller's briefing: {exc}"}
        if time.monotonic() >= deadline:
            return {"amp_preflight_problem": f"no briefing from the controller within {timeout:.0f} s"}
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
