"""Misbehaving HTTP servers on loopback, for proving the suite never crashes or hangs on them."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

Handler = Callable[[socket.socket], None]


@contextmanager
def raw_server(handler: Handler) -> Iterator[str]:
    """Serve each connection with ``handler`` on a free 127.0.0.1 port; yields the base URL."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.2)
    stop = threading.Event()
    connections: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connections.append(conn)
            threading.Thread(target=handler, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(2)
        listener.close()
        for conn in connections:
            with suppress(OSError):
                conn.close()


def _read_request(conn: socket.socket) -> None:
    conn.settimeout(5)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
    except OSError:
        return


def never_answers(conn: socket.socket) -> None:
    """Accept, read the request, then say nothing."""
    _read_request(conn)
    threading.Event().wait(60)


def answers(status: str, content_type: str, body: bytes) -> Handler:
    def handle(conn: socket.socket) -> None:
        _read_request(conn)
        head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        with suppress(OSError):
            conn.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
        conn.close()

    return handle


def resets(conn: socket.socket) -> None:
    """Read the request, then close without a word."""
    _read_request(conn)
    conn.close()


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
