"""The ``amp-conformance`` console script's first step, before anything heavy is imported.

A parallel run's workers are forked from a fork server (``engine.forkserver``) that imports pytest,
the plugin and the checks, about half a second of one core. Started here, from the arguments alone,
it imports them while the command imports its own, instead of after; the run's controller adopts it
(``forkserver.take_early``). The arguments are read only to see whether they ask for workers: the
command parses them properly, and a server the run turns out not to use is closed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

#: First arguments that are not a check run (subcommands and what only prints).
_NOT_A_RUN = frozenset({"validate", "validate-contract", "report", "diff", "matrix"})
_PRINTS_ONLY = frozenset({"-h", "--help", "--list", "--list-protocols", "--version"})


def asks_for_workers(arguments: Sequence[str]) -> bool:
    """Whether ``arguments`` plainly ask for a parallel run (``--workers N``, N > 1, or ``auto`` on
    more than one core), and for nothing that cannot run in parallel or does not run at all."""
    if arguments and arguments[0] in _NOT_A_RUN:
        return False
    value: str | None = None
    for index, argument in enumerate(arguments):
        if argument in _PRINTS_ONLY or argument == "--app" or argument.startswith("--app="):
            return False
        if argument == "--workers" and index + 1 < len(arguments):
            value = arguments[index + 1]
        elif argument.startswith("--workers="):
            value = argument.partition("=")[2]
    if value is None:
        return False
    value = value.strip().lower()
    if value == "auto":
        return (os.cpu_count() or 1) > 1
    return value.isdigit() and int(value) > 1


def entry() -> None:
    # the checks' words name the command's options (--admin-token), not the plugin's: set before the
    # fork server starts, so that its workers inherit it too (``cli.run_suite`` sets it as well)
    from amp_conformance.engine.options import COMMAND_MODE_VARIABLE

    os.environ[COMMAND_MODE_VARIABLE] = "1"
    if asks_for_workers(sys.argv[1:]):
        from amp_conformance.engine import forkserver

        forkserver.start_early(forkserver.WORKER_MODULES)
    from amp_conformance.cli import entry as command

    command()
