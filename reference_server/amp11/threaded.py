"""The AMP v1.1 reference server's REST channel served in a thread of this process, on a free port of
127.0.0.1, its store readable: what the network tests and benchmarks count as left on the server."""

from __future__ import annotations

import socket
import threading
import time

from reference_server.amp11.rest import create_rest_app
from reference_server.amp11.store import Store


class ThreadedRestServer:
    """``with ThreadedRestServer() as server: server.url``; ``rows_left()`` lists the memories stored."""

    def __init__(self) -> None:
        import uvicorn

        self.store = Store()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        config = uvicorn.Config(create_rest_app(self.store), log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="amp11-rest", daemon=True
        )

    def __enter__(self) -> ThreadedRestServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the v1.1 reference server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._socket.close()

    def rows_left(self) -> list[str]:
        return sorted(memory.id for _, memory in self.store.rows())
