"""Shared steps made once per run across a parallel run's workers, not once per worker.

A shared step (``CheckContext.shared``) is what several read-only checks use: a module's cells, or
cells that checks of several modules judge alike. In a serial run it is made once; in a parallel run
each worker whose checks use it used to make its own, so a step that five modules share was made up
to five times. Here the first worker to need a step *claims* it and, once made, *publishes* it (the
value, the exchanges that made it, the maker's protocol state) in the run's folder; a worker needing
it later *adopts* it, waiting if it is still being made, exactly as a later check of the same worker
would: the requests are shown as its evidence, not sent again.

What the steps created may be in use in any worker until every worker has finished its checks, so
a worker cleans up only then: at its end it says it is done (:meth:`SharedStore.done`) and waits for
the others (:meth:`SharedStore.wait_for_workers`; the controller says it for a worker that went down
without saying it, :func:`mark_done`). A worker that ends early is idle anyway, and the cleanups then
run at once. Every decision on a step (claim, adopt) is taken under one lock on the run's folder
(``fcntl.flock``, released if its holder dies); without ``fcntl`` (Windows) nothing is shared across
workers.

The folder is the controller's briefing folder (``engine.parallel.Briefing``): created ``0700`` by
the run's own process, removed at the run's end. Published steps are pickles only this run's
processes write and read.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import time
from collections.abc import Callable, Iterator
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no sharing across workers
    fcntl = None  # type: ignore[assignment]

#: How long a worker waits for a step another worker is making before it makes its own.
ADOPT_TIMEOUT = 120.0


class SharedStore:
    """One worker's view of the run's shared steps (see the module docstring)."""

    def __init__(self, folder: str, worker: str, *, workers: int = 1):
        self.folder = folder
        self.worker = worker
        self.workers = workers
        """How many workers the run has (``gw0`` ... ``gw{workers-1}``)."""

    @staticmethod
    def available() -> bool:
        return fcntl is not None

    # paths and the lock ------------------------------------------------------------------------

    def _path(self, name: str, kind: str) -> str:
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]
        return os.path.join(self.folder, f"step-{digest}.{kind}")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(os.path.join(self.folder, "steps.lock"), "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # the maker's side ------------------------------------------------------------------------------

    def claim(self, name: str) -> bool:
        """Whether this worker is the one to make ``name`` (no worker has claimed it yet)."""
        try:
            with self._locked():
                if os.path.exists(self._path(name, "claim")):
                    return False
                with open(self._path(name, "claim"), "w", encoding="utf-8") as handle:
                    handle.write(self.worker)
        except OSError:
            return False  # no store after all: make it here, share nothing
        return True

    def publish(self, name: str, data: bytes | None) -> None:
        """The step made (its pickle), or None when it cannot be shared: waiting workers make their own."""
        path = self._path(name, "step" if data is not None else "unshared")
        with contextlib.suppress(OSError):
            with open(f"{path}.part", "wb") as handle:
                handle.write(data or b"")
            os.replace(f"{path}.part", path)

    def done(self) -> None:
        """This worker has run its last check (its cleanup then waits for the others': see
        :meth:`wait_for_workers`)."""
        mark_done(self.folder, self.worker)

    def all_done(self) -> bool:
        """Whether every worker of the run has said it is done."""
        return all(os.path.exists(_done_path(self.folder, f"gw{index}")) for index in range(self.workers))

    def wait_for_workers(self, interrupted: Callable[[], bool], timeout: float) -> bool:
        """Wait until each of the run's workers has said it is done; False if one has not within
        ``timeout`` (or the run is interrupted): the cleanup then goes ahead anyway."""
        deadline = time.monotonic() + timeout
        pause = 0.01
        while not self.all_done():
            if time.monotonic() >= deadline or interrupted():
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.025)  # a stat per worker: cheap, and the end of the run waits on it
        return True

    # another worker's side ---------------------------------------------------------------------

    def adopt(
        self, name: str, interrupted: Callable[[], bool], timeout: float = ADOPT_TIMEOUT, *, wait: bool = True
    ) -> bytes | None:
        """The published pickle of a step another worker claimed, once it is there (only if it is
        there already, without ``wait``); None when it will not be shared (given up, or not in time)."""
        deadline = time.monotonic() + timeout
        pause = 0.01
        while True:
            try:
                with self._locked():
                    if os.path.exists(self._path(name, "unshared")):
                        return None
                    if os.path.exists(self._path(name, "step")):
                        with open(self._path(name, "step"), "rb") as handle:
                            return handle.read()
            except OSError:
                return None
            if not wait or time.monotonic() >= deadline or interrupted():
                return None
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


def _done_path(folder: str, worker: str) -> str:
    return os.path.join(folder, f"done-{worker}")


def mark_done(folder: str, worker: str) -> None:
    """Say that ``worker`` has run its last check (the controller says it for a worker that died)."""
    with contextlib.suppress(OSError), open(_done_path(folder, worker), "w", encoding="utf-8") as handle:
        handle.write(worker)


def dumps_step(step: Any, exchange_type: type, to_wire: Callable[[Any], dict[str, Any]]) -> bytes | None:
    """``step`` (a ``SharedStep``) as bytes: its exchanges as plain data first (the reading worker binds
    them to its own replay context), then the step, in which each of those exchanges stands for its
    place among them; None when the value cannot be pickled."""
    places = {id(exchange): index for index, exchange in enumerate(step.exchanges)}

    class _Pickler(pickle.Pickler):
        def persistent_id(self, obj: Any) -> Any:
            if isinstance(obj, exchange_type):
                place = places.get(id(obj))
                return ("exchange", place) if place is not None else ("loose", to_wire(obj))
            return None

    buffer = io.BytesIO()
    try:
        pickle.dump([to_wire(exchange) for exchange in step.exchanges], buffer, pickle.HIGHEST_PROTOCOL)
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(step)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return None
    return buffer.getvalue()


def loads_step(data: bytes, from_wire: Callable[[dict[str, Any]], Any]) -> Any:
    """The ``SharedStep`` :func:`dumps_step` wrote, its exchanges rebuilt by ``from_wire``."""
    buffer = io.BytesIO(data)
    exchanges = [from_wire(wire) for wire in pickle.load(buffer)]

    class _Unpickler(pickle.Unpickler):
        def persistent_load(self, pid: Any) -> Any:
            kind, payload = pid
            return exchanges[payload] if kind == "exchange" else from_wire(payload)

    return _Unpickler(buffer).load()
