"""One budget of requests in flight for every process of a parallel run (``engine.limiter``).

Eight workers each allowed twelve requests at once would send ninety-six to a server that serves one
at a time. So the controller makes the run's limiter a small shared file (in a temporary folder of
its own) before the workers start, names it in their ``workerinput``, and each worker's connection
takes its slots there: the limit adapts to what the server does with all of the run's requests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from typing import Any

from amp_conformance.engine.limiter import AdaptiveLimiter

#: Where a worker finds the shared budget's path in its ``workerinput``.
LIMITER_PATH_KEY = "amp_limiter_path"


def _connection(session: object) -> Any:
    """The session's HTTP connection when it has one with a limiter (an in-process app has none)."""
    connection = getattr(session, "http_connection", None)
    return connection if getattr(connection, "limiter", None) is not None else None


class SharedBudget:
    """The controller's side: the file, made for the session's connection, and its removal."""

    def __init__(self) -> None:
        self.folder: str | None = None
        self.path: str | None = None

    def open(self, session: object, cap: int | None) -> None:
        """Make the file and give it to the controller's own connection (its preflight and briefing
        requests count too); nothing when the session has no limited connection or no folder can be
        made (each process then keeps a budget of its own)."""
        connection = _connection(session)
        if connection is None:
            return
        try:
            self.folder = tempfile.mkdtemp(prefix="amp-conformance-budget-")
            path = os.path.join(self.folder, "limiter")
            connection.limiter = AdaptiveLimiter.shared(path, cap=cap)
        except OSError:
            self.close()
            return
        self.path = path

    def brief(self, workerinput: dict[str, Any]) -> None:
        if self.path is not None:
            workerinput[LIMITER_PATH_KEY] = self.path

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = self.path = None


def join_budget(session: object, workerinput: Mapping[str, Any]) -> None:
    """A worker's side: its connection takes its slots from the controller's file."""
    path = workerinput.get(LIMITER_PATH_KEY)
    connection = _connection(session)
    if not isinstance(path, str) or connection is None:
        return
    with contextlib.suppress(OSError):  # the file is gone: this worker keeps a budget of its own
        connection.limiter = AdaptiveLimiter.join(path)
