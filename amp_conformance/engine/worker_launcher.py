"""The command xdist starts for each worker when a fork server is up (``engine.forkserver``).

Run as ``python -I -S worker_launcher.py SOCKET INTERPRETER`` followed by the arguments execnet gives
an interpreter (``-u -c BOOTSTRAP``). It hands its standard streams, environment and folder to the
fork server, which forks a worker from a process that has already imported pytest and the checks;
the launcher then stands in for that worker: it forwards SIGTERM to it and exits with its status, so
xdist waits on and kills it as it would the worker itself. When the fork server cannot be reached the
launcher becomes the worker (``os.execv`` of the interpreter with execnet's arguments): a run never
depends on the fork server.

Built-in modules and ``socket`` only (no ``json``, ``typing``, ``contextlib``: each costs milliseconds,
and xdist starts the workers one after the other): it runs in ~10 ms. The request is a length and a
``marshal`` of plain lists and strings; each answer is a signed 8-byte integer (the worker's pid, then
its exit status).
"""

from __future__ import annotations

import marshal
import os
import signal
import socket
import sys

#: Seconds to wait for the fork server's answers before becoming the worker instead.
CONNECT_TIMEOUT = 10.0
ANSWER_BYTES = 8


def _become_worker(interpreter: str, arguments: list[str]) -> None:
    os.execv(interpreter, [interpreter, *arguments])


def _answer(connection: socket.socket) -> int:
    data = b""
    while len(data) < ANSWER_BYTES:
        chunk = connection.recv(ANSWER_BYTES - len(data))
        if not chunk:
            raise ConnectionError("the fork server closed the connection")
        data += chunk
    return int.from_bytes(data, "big", signed=True)


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
    worker: list[int] = []
    """The worker's pid, once the fork server has told it."""
    held: list[int] = []
    """A SIGTERM that came before the pid did: forwarded once it is known."""

    def forward(signum: int, frame: object) -> None:
        if not worker:
            held.append(signum)
            return
        try:  # noqa: SIM105 (contextlib costs the launcher milliseconds)
            os.kill(worker[0], signum)
        except OSError:
            pass

    signal.signal(signal.SIGTERM, forward)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(CONNECT_TIMEOUT)
    try:
        connection.connect(socket_path)
        payload = marshal.dumps([arguments, sorted(os.environ.items()), os.getcwd()])
        socket.send_fds(connection, [len(payload).to_bytes(4, "big")], [0, 1, 2])
        connection.sendall(payload)
        pid = _answer(connection)
    except (OSError, ValueError):
        connection.close()
        if held:  # told to end before there was a worker to tell
            _exit_like(-held[0])
        _become_worker(interpreter, arguments)
        return
    connection.settimeout(None)
    worker.append(pid)
    for signum in held:
        forward(signum, None)
    # the worker holds the streams now; the launcher keeps none (its end is seen as the worker's)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    try:
        status = _answer(connection)
    except (OSError, ValueError):
        status = 1
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
