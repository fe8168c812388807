"""The command xdist starts for each worker when a fork server is up (``engine.forkserver``).

Run as ``python -I -S worker_launcher.py SOCKET INTERPRETER`` followed by the arguments execnet gives
an interpreter (``-u -c BOOTSTRAP``). It hands its standard streams, environment and folder to the
fork server, which forks a worker from a process that has already imported pytest and the checks;
the launcher then stands in for that worker: it forwards SIGTERM to it and exits with its status, so
xdist waits on and kills it as it would the worker itself. When the fork server cannot be reached the
launcher becomes the worker (``os.execv`` of the interpreter with execnet's arguments): a run never
depends on the fork server.

Only the standard library, nothing that ``-S`` leaves out: this starts in ~15 ms.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
from typing import BinaryIO

#: Seconds to wait for the fork server's answers before becoming the worker instead.
CONNECT_TIMEOUT = 10.0


def _become_worker(interpreter: str, arguments: list[str]) -> None:
    os.execv(interpreter, [interpreter, *arguments])


def _request(connection: socket.socket, answers: BinaryIO, arguments: list[str]) -> int:
    """Send the streams and the context; return the worker's pid."""
    payload = json.dumps({"argv": arguments, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    socket.send_fds(connection, [struct.pack("!I", len(payload))], [0, 1, 2])
    connection.sendall(payload)
    return int(_answer(answers, "pid"))


def _answer(answers: BinaryIO, key: str) -> int:
    line = answers.readline()
    if not line:
        raise ConnectionError("the fork server closed the connection")
    return int(json.loads(line)[key])


def _exit_like(status: int) -> None:
    """Exit as the worker did: its code, or the signal that ended it."""
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status if 0 <= status < 256 else 1)


def main(argv: list[str]) -> None:
    socket_path, interpreter, arguments = argv[0], argv[1], argv[2:]
    # the terminal's Ctrl-C reaches the worker itself (same process group); the launcher only waits
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(CONNECT_TIMEOUT)
    try:
        connection.connect(socket_path)
        answers = connection.makefile("rb")
        pid = _request(connection, answers, arguments)
    except (OSError, ValueError, KeyError):
        connection.close()
        _become_worker(interpreter, arguments)
        return
    connection.settimeout(None)

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)

    signal.signal(signal.SIGTERM, forward)
    # the worker holds the streams now; the launcher keeps none (its end is seen as the worker's)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    try:
        status = _answer(answers, "status")
    except (OSError, ValueError, KeyError):
        status = 1
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
