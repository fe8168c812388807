"""The run's own exit handlers, for the processes that end with ``os._exit``.

The command (``cli.entry``) and a worker forked from the fork server end with ``os._exit``, skipping
the interpreter's teardown of everything they imported (~0.3 s at the end of every run). What must
still run then is registered here (:func:`at_exit`) and run explicitly (:func:`run_exit_handlers`);
the ``atexit`` handlers other libraries registered are last resorts for what their own teardown
(pytest's session end, xdist's node teardown) has already done, and are left out. Standard library
only, nothing heavy: the command imports it with its first line.
"""

from __future__ import annotations

import atexit
import contextlib
import sys
from collections.abc import Callable

_handlers: list[Callable[[], object]] = []


def at_exit(handler: Callable[[], object]) -> None:
    """Run ``handler`` when the process ends: at a plain interpreter exit (``atexit``), or where the
    process ends itself (:func:`run_exit_handlers`), once either way."""
    _handlers.append(handler)
    atexit.register(handler)


def run_exit_handlers() -> None:
    """Run what :func:`at_exit` registered (the last first, each once, one that fails does not stop the
    others), then logging's shutdown, which flushes its handlers as the interpreter's exit would."""
    while _handlers:
        handler = _handlers.pop()
        atexit.unregister(handler)
        with contextlib.suppress(Exception):
            handler()
    logging = sys.modules.get("logging")
    if logging is not None:
        with contextlib.suppress(Exception):
            logging.shutdown()
