"""A fault-injecting HTTP/1.1 proxy for the project's own tests and benchmarks (issues 36 and 37).

Real networks break exchanges in ways a correct server cannot prevent: a connection reset before the
request arrives (nothing applied) or after the server applied it (the client cannot tell which), a
response cut short, a response that never comes, a latency spike; and real servers may serve one
request at a time. ``FaultProxy`` stands between the suite and a server and does each of those on
chosen exchanges, seeded, so a run through it is repeatable and the suite's recovery can be tested
end to end::

    with FaultProxy(server.url, kind="reset-after", match=r"^POST /amp/v1/memories$", nth=(2,)) as proxy:
        run_the_suite(base_url=proxy.url)
        assert proxy.counts()["reset-after"] == 1

Faults (``KINDS``): ``reset-before`` (the request is read, never forwarded, and the client connection
reset: SO_LINGER 0, an RST), ``reset-after`` (forwarded, the upstream's whole response read, then the
client connection reset without a response byte), ``cut-body`` (the head and half the body sent, then
the connection closed; an empty body: half the head), ``stall`` (forwarded, then nothing sent for
``seconds``, then the connection closed), ``latency`` (forwarded, then ``seconds`` of delay before
the answer). A rule picks its exchanges by ``match`` (a regex searched in ``"METHOD target"``), then
``nth`` (1-based positions among the matching exchanges) or ``rate`` (a seeded share of them) or,
given neither, every match. ``serial=True`` forwards one request at a time, each after ``service``
seconds (a server that serialises, as an embedding store does).

Client connections are kept alive (h11 parses both sides); each forwarded request gets a fresh
upstream connection. ``python -m reference_server.netproxy UPSTREAM ...`` runs it from a shell.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from types import TracebackType
from urllib.parse import urlsplit

import h11

KINDS = ("reset-before", "reset-after", "cut-body", "stall", "latency")
#: Seconds a ``stall`` holds the response (past the suite's ``--timeout 3``) and a ``latency`` spike.
DEFAULT_SECONDS = {"stall": 5.0, "latency": 1.0}
_HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"proxy-connection"}
_READ_SIZE = 65536


@dataclasses.dataclass(frozen=True)
class Fault:
    """One rule: which exchanges it breaks and how (see the module's docstring)."""

    kind: str
    rate: float | None = None
    match: str | None = None
    nth: tuple[int, ...] = ()
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; one of {', '.join(KINDS)}")
        if self.rate is not None and not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"a fault rate is a share between 0 and 1, not {self.rate}")
        if any(n < 1 for n in self.nth):
            raise ValueError(f"nth counts matching exchanges from 1: {self.nth}")
        if self.match is not None:
            re.compile(self.match)

    @property
    def hold(self) -> float:
        """Seconds of a ``stall`` or ``latency`` (0 for the other kinds)."""
        if self.seconds is not None:
            return self.seconds
        return DEFAULT_SECONDS.get(self.kind, 0.0)


@dataclasses.dataclass(frozen=True)
class ProxyExchange:
    """One request the proxy received, and what it did with it (``fault`` is None: forwarded intact)."""

    index: int
    method: str
    target: str
    fault: str | None
    status: int | None
    """The upstream's status when it was forwarded and answered."""


class FaultProxy:
    """The proxy, served from its own thread while the ``with`` block runs (``start``/``stop`` too).

    ``kind``/``rate``/``match``/``nth``/``seconds`` make one rule; ``faults`` adds more (the first rule
    that picks an exchange applies; every rule counts its matches). ``counts()`` and ``exchanges()``
    say what it did, readable from any thread at any time.
    """

    def __init__(
        self,
        upstream: str,
        *,
        kind: str | None = None,
        rate: float | None = None,
        match: str | None = None,
        nth: Iterable[int] = (),
        seconds: float | None = None,
        faults: Sequence[Fault] = (),
        seed: int = 0,
        serial: bool = False,
        service: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the upstream is an http:// base URL, not {upstream!r}")
        self.upstream = upstream
        self._upstream_host = parts.hostname
        self._upstream_port = parts.port or 80
        self._upstream_netloc = parts.netloc.encode("ascii")
        self._upstream_path = parts.path.rstrip("/").encode("ascii")
        rules = list(faults)
        if kind is not None:
            rules.append(Fault(kind, rate=rate, match=match, nth=tuple(nth), seconds=seconds))
        self.faults: tuple[Fault, ...] = tuple(rules)
        self._patterns = [re.compile(rule.match) if rule.match else None for rule in self.faults]
        self._matched = [0] * len(self.faults)
        self._rng = random.Random(seed)
        self.serial = serial
        self.service = service
        self._host = host
        self._port = port
        self.port = 0
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._log: list[ProxyExchange] = []
        self._active = 0
        self._upstream_active = 0
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._serial_lock: asyncio.Lock | None = None

    # -- what it did ------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The proxy's base URL: the upstream's path on the proxy's address."""
        return f"http://{self._host}:{self.port}{self._upstream_path.decode('ascii')}"

    def counts(self) -> dict[str, int]:
        """Faults applied by kind, plus ``exchanges`` (requests received), ``forwarded`` (sent
        upstream), ``peak_active`` (most requests the proxy held at once) and ``peak_upstream`` (most
        forwarded at once: 1 in serial mode)."""
        with self._lock:
            return dict(self._counts)

    def exchanges(self) -> list[ProxyExchange]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._log)

    def broken(self) -> list[ProxyExchange]:
        """The exchanges a fault was applied to."""
        return [exchange for exchange in self.exchanges() if exchange.fault is not None]

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        self._thread = threading.Thread(target=self._run, name="amp-netproxy", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._failed is not None:
            raise RuntimeError(f"the proxy could not start: {self._failed}") from self._failed
        if not self.port:
            raise RuntimeError("the proxy did not start within 10 s")
        return self

    def stop(self) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop ended already
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self.serve())
        except BaseException as exc:  # reported by start()
            self._failed = exc
            self._ready.set()
        finally:
            loop.close()

    async def serve(self, started: threading.Event | None = None) -> None:
        """Serve until ``stop()`` (or the task is cancelled): the CLI runs this on its own loop."""
        self._stopping = asyncio.Event()
        self._serial_lock = asyncio.Lock()
        server = await asyncio.start_server(self._handle, self._host, self._port)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        if started is not None:
            started.set()
        try:
            await self._stopping.wait()
        finally:
            server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await server.wait_closed()

    # -- one client connection --------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        connection = h11.Connection(h11.SERVER)
        try:
            while True:
                received = await _read_request(connection, reader)
                if received is None:
                    break
                if not await self._exchange(connection, writer, *received):
                    break
                if connection.our_state is not h11.DONE or connection.their_state is not h11.DONE:
                    break
                connection.start_next_cycle()
        except (OSError, h11.ProtocolError, asyncio.CancelledError):
            pass  # the client left, spoke no HTTP, or the proxy is stopping: this connection is done
        finally:
            self._writers.discard(writer)
            if task is not None:
                self._tasks.discard(task)
            if not writer.transport.is_closing():
                writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def _choose(self, label: str) -> Fault | None:
        chosen: Fault | None = None
        for position, (rule, pattern) in enumerate(zip(self.faults, self._patterns, strict=True)):
            if pattern is not None and not pattern.search(label):
                continue
            self._matched[position] += 1
            if rule.nth:
                fires = self._matched[position] in rule.nth
            elif rule.rate is not None:
                fires = self._rng.random() < rule.rate
            else:
                fires = True
            if fires and chosen is None:
                chosen = rule
        return chosen

    async def _exchange(
        self, connection: h11.Connection, writer: asyncio.StreamWriter, request: h11.Request, body: bytes
    ) -> bool:
        """Answer one request (or break it); True when the client connection may carry another."""
        method = request.method.decode("ascii", "replace")
        target = request.target.decode("ascii", "replace")
        with self._lock:
            index = self._counts["exchanges"]
            self._counts["exchanges"] += 1
            fault = self._choose(f"{method} {target}")
            if fault is not None:
                self._counts[fault.kind] += 1
            position = len(self._log)
            self._log.append(ProxyExchange(index, method, target, fault.kind if fault else None, None))
            self._active += 1
            self._counts["peak_active"] = max(self._counts["peak_active"], self._active)
        kind = fault.kind if fault is not None else None
        status: int | None = None
        try:
            if kind == "reset-before":
                _reset(writer)
                return False
            try:
                status, reason, headers, payload = await self._forward(request, body)
            except (OSError, h11.ProtocolError) as exc:
                status, reason, headers = 502, b"Bad Gateway", [(b"content-type", b"text/plain")]
                payload = f"netproxy: the upstream failed: {exc}\n".encode()
            if kind == "reset-after":
                _reset(writer)
                return False
            if kind == "stall":
                await asyncio.sleep(fault.hold if fault is not None else 0.0)
                writer.close()
                return False
            if kind == "latency" and fault is not None:
                await asyncio.sleep(fault.hold)
            head, data = _response_bytes(connection, request.method, status, reason, headers, payload)
            if kind == "cut-body":
                writer.write(head + data[: len(data) // 2] if data else head[: len(head) // 2])
                await writer.drain()
                writer.close()
                return False
            writer.write(head + data)
            await writer.drain()
            return True
        finally:
            with self._lock:
                self._active -= 1
                self._log[position] = dataclasses.replace(self._log[position], status=status)

    async def _forward(
        self, request: h11.Request, body: bytes
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes]:
        """Send the request upstream on a fresh connection and read the whole response."""
        async with self._upstream_slot():
            if self.service:
                await asyncio.sleep(self.service)
            reader, writer = await asyncio.open_connection(self._upstream_host, self._upstream_port)
            try:
                upstream = h11.Connection(h11.CLIENT)
                headers = [
                    (name, value)
                    for name, value in request.headers
                    if name.lower() not in _HOP_BY_HOP and name.lower() != b"host"
                ]
                headers.insert(0, (b"host", self._upstream_netloc))
                had_body = any(
                    name.lower() in (b"content-length", b"transfer-encoding") for name, _ in request.headers
                )
                if body or had_body:
                    headers.append((b"content-length", str(len(body)).encode("ascii")))
                headers.append((b"connection", b"close"))
                target = self._upstream_path + request.target
                wire = upstream.send(h11.Request(method=request.method, target=target, headers=headers))
                if body:
                    wire += upstream.send(h11.Data(data=body)) or b""
                wire += upstream.send(h11.EndOfMessage()) or b""
                writer.write(wire)
                await writer.drain()
                with self._lock:
                    self._counts["forwarded"] += 1
                response: h11.Response | None = None
                chunks: list[bytes] = []
                while True:
                    event = upstream.next_event()
                    if event is h11.NEED_DATA:
                        upstream.receive_data(await reader.read(_READ_SIZE))
                    elif isinstance(event, h11.Response):
                        response = event
                    elif isinstance(event, h11.Data):
                        chunks.append(bytes(event.data))
                    elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                        break
                if response is None:
                    raise h11.RemoteProtocolError("the upstream closed without a response")
                return (
                    response.status_code,
                    response.reason,
                    list(response.headers.raw_items()),
                    b"".join(chunks),
                )
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

    @contextlib.asynccontextmanager
    async def _upstream_slot(self) -> AsyncIterator[None]:
        lock = self._serial_lock if self.serial else None
        if lock is not None:
            await lock.acquire()
        with self._lock:
            self._upstream_active += 1
            self._counts["peak_upstream"] = max(self._counts["peak_upstream"], self._upstream_active)
        try:
            yield
        finally:
            with self._lock:
                self._upstream_active -= 1
            if lock is not None:
                lock.release()


async def _read_request(
    connection: h11.Connection, reader: asyncio.StreamReader
) -> tuple[h11.Request, bytes] | None:
    """The next request on a client connection with its whole body; None when the client left."""
    request: h11.Request | None = None
    body: list[bytes] = []
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            connection.receive_data(await reader.read(_READ_SIZE))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            assert request is not None
            return request, b"".join(body)
        elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None


def _response_bytes(
    connection: h11.Connection,
    method: bytes,
    status: int,
    reason: bytes,
    headers: list[tuple[bytes, bytes]],
    payload: bytes,
) -> tuple[bytes, bytes]:
    """The response's head and body as sent to the client, framed by Content-Length (a HEAD, 204 or
    304 keeps the upstream's own length header and has no body)."""
    bodiless = method == b"HEAD" or status in (204, 304) or status < 200
    kept = [
        (name, value)
        for name, value in headers
        if name.lower() not in _HOP_BY_HOP or (bodiless and name.lower() == b"content-length")
    ]
    if not bodiless:
        kept.append((b"content-length", str(len(payload)).encode("ascii")))
    head = connection.send(h11.Response(status_code=status, reason=reason, headers=kept)) or b""
    data = b""
    if payload and not bodiless:
        data = connection.send(h11.Data(data=payload)) or b""
    connection.send(h11.EndOfMessage())
    return head, data


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close the client connection with an RST (SO_LINGER 0), no byte of a response sent."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m reference_server.netproxy",
        description="An HTTP/1.1 proxy that breaks chosen exchanges (seeded) or serves one request at "
        "a time; prints its URL, then on SIGINT/SIGTERM what it did (JSON).",
    )
    parser.add_argument("upstream", help="the server's base URL, e.g. http://127.0.0.1:8765")
    parser.add_argument("--port", type=int, default=0, help="port to bind on 127.0.0.1 (default: a free one)")
    parser.add_argument("--kind", choices=KINDS, help="the fault to apply")
    parser.add_argument("--rate", type=float, help="the share of matching exchanges to break (seeded)")
    parser.add_argument("--seed", type=int, default=0, help="the seed of --rate (default 0)")
    parser.add_argument("--match", help="a regex searched in 'METHOD target' that picks the exchanges")
    parser.add_argument(
        "--nth",
        type=lambda text: tuple(int(part) for part in text.split(",") if part),
        default=(),
        help="comma-separated 1-based positions among the matching exchanges to break",
    )
    parser.add_argument("--seconds", type=float, help="a stall's hold or a latency spike, in seconds")
    parser.add_argument("--serial", action="store_true", help="forward one request at a time")
    parser.add_argument("--service", type=float, default=0.0, help="seconds of service per forwarded request")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        proxy = FaultProxy(
            args.upstream,
            kind=args.kind,
            rate=args.rate,
            match=args.match,
            nth=args.nth,
            seconds=args.seconds,
            seed=args.seed,
            serial=args.serial,
            service=args.service,
            port=args.port,
        )
    except (ValueError, re.error) as exc:
        print(f"netproxy: {exc}", file=sys.stderr)
        return 2

    async def run() -> None:
        started = threading.Event()
        task = asyncio.ensure_future(proxy.serve(started))
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, task.cancel)
        while not started.is_set() and not task.done():
            await asyncio.sleep(0.01)
        if started.is_set():
            print(f"{proxy.url} -> {proxy.upstream}", flush=True)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    began = time.monotonic()
    asyncio.run(run())
    print(json.dumps({**proxy.counts(), "seconds": round(time.monotonic() - began, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
