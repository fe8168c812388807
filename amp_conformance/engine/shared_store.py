"""Shared steps made once per run across a parallel run's workers, not once per worker.

A shared step (``CheckContext.shared``) is what several read-only checks use: a module's cells, or
cells that checks of several modules judge alike. In a serial run it is made once; in a parallel run
each worker whose checks use it used to make its own, so a step that five modules share was made up
to five times. Here the first worker to need a step *claims* it and, once made, *publishes* it (the
value, the exchanges that made it, the maker's protocol state) in the run's folder; a worker needing
it later *adopts* it, waiting if it is still being made, exactly as a later check of the same worker
would: the requests are shown as its evidence, not sent again.

What the step created belongs to its maker's cleanup, unless another worker adopted it: a worker that
adopted it may still use those cells after the maker has finished, so at its end the maker *hands
them over* to the controller, which cleans them up once every worker is done. A step the maker has
*closed* (its end came first) is not adopted: the later worker makes its own. Every decision on a step
(claim, adopt, close) is taken under one lock on the run's folder (``fcntl.flock``, released if its
holder dies); without ``fcntl`` (Windows) nothing is shared across workers.

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

    def __init__(self, folder: str, worker: str):
        self.folder = folder
        self.worker = worker
        self._made: set[str] = set()
        """Steps this worker claimed (and published or gave up)."""

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
        self._made.add(name)
        return True

    def publish(self, name: str, data: bytes | None) -> None:
        """The step made (its pickle), or None when it cannot be shared: waiting workers make their own."""
        path = self._path(name, "step" if data is not None else "unshared")
        with contextlib.suppress(OSError):
            with open(f"{path}.part", "wb") as handle:
                handle.write(data or b"")
            os.replace(f"{path}.part", path)

    def close(self) -> set[str]:
        """At this worker's end: every step it made is closed to later adoption; returns the names of
        those another worker adopted (their cells are handed over to the controller)."""
        adopted: set[str] = set()
        with contextlib.suppress(OSError), self._locked():
            for name in self._made:
                if os.path.exists(self._path(name, "users")):
                    adopted.add(name)
                with open(self._path(name, "closed"), "w", encoding="utf-8") as handle:
                    handle.write(self.worker)
        return adopted

    # another worker's side ---------------------------------------------------------------------

    def adopt(
        self, name: str, interrupted: Callable[[], bool], timeout: float = ADOPT_TIMEOUT
    ) -> bytes | None:
        """The published pickle of a step another worker claimed, once it is there, registering this
        worker as a user; None when it will not be shared (given up, closed, or not made in time)."""
        deadline = time.monotonic() + timeout
        pause = 0.01
        while True:
            try:
                with self._locked():
                    if os.path.exists(self._path(name, "closed")) or os.path.exists(
                        self._path(name, "unshared")
                    ):
                        return None
                    if os.path.exists(self._path(name, "step")):
                        with open(self._path(name, "step"), "rb") as handle:
                            data = handle.read()
                        with open(self._path(name, "users"), "a", encoding="utf-8") as handle:
                            handle.write(f"{self.worker}\n")
                        return data
            except OSError:
                return None
            if time.monotonic() >= deadline or interrupted():
                return None
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


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
