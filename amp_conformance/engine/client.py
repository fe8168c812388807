"""The recording HTTP client every check talks through.

Each request becomes an :class:`Exchange`: what was sent, what came back, how long it took. A failing
check shows its exchanges with secrets masked and a curl line that reproduces the request, so an
implementer can see the problem without rerunning the suite. Transport trouble never escapes as a
raw httpx exception: it becomes a :class:`~amp_conformance.engine.outcomes.ToolError` (an *error*
outcome), and after a few consecutive failures the connection stops sending, so a dead server costs
one clear error per check instead of a timeout per request.
"""

from __future__ import annotations

import functools
import json
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn, TypeVar

import httpx

from amp_conformance.engine.exchange import MAX_RESPONSE_BYTES, Exchange
from amp_conformance.engine.limiter import AdaptiveLimiter
from amp_conformance.engine.outcomes import (
    CheckFailure,
    DeadlineExceeded,
    ServerUnavailable,
    TransportFailure,
)
from amp_conformance.engine.replay import ReplayContext

_NO_BODY = object()

_T = TypeVar("_T")

#: At most this many requests of one :func:`at_once` call are in flight together.
AT_ONCE_LIMIT = 12

_Held = tuple[list[Exchange], Exchange]
_held = threading.local()
"""Per thread: the (log, exchange) pairs an :func:`at_once` call holds back, to record in call order."""


class Reply:
    """A received response, with JSON access that fails the check (not the tool) on a bad body."""

    def __init__(self, exchange: Exchange):
        self.exchange = exchange
        self.status: int = exchange.status or 0
        self.headers = httpx.Headers(exchange.response_headers)
        self.content = exchange.response_body
        self._parsed: Any = _NO_BODY

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        if self._parsed is _NO_BODY:
            if self.exchange.truncated:
                raise CheckFailure(
                    f"response body exceeds {MAX_RESPONSE_BYTES} bytes", exchange=self.exchange
                )
            try:
                self._parsed = json.loads(self.content)
            except (ValueError, RecursionError) as exc:
                kind = self.headers.get("content-type", "no content type")
                raise CheckFailure(
                    f"response body is not JSON ({kind}): {exc}",
                    expected="a JSON body",
                    exchange=self.exchange,
                ) from None
        return self._parsed

    def json_object(self) -> dict[str, Any]:
        body = self.json()
        if not isinstance(body, dict):
            raise CheckFailure(
                f"response body is JSON {type(body).__name__}, not an object",
                expected="a JSON object",
                exchange=self.exchange,
            )
        return body


@functools.cache
def default_tls_context() -> ssl.SSLContext:
    """httpx's default certificate verification (its CA bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``),
    made once per process: loading the bundle takes ~25 ms, and a parallel run's fork server makes it
    once for all its workers (``engine.forkserver``)."""
    return httpx.create_ssl_context()


class Connection:
    """The run's HTTP connection pool, with a breaker that stops sending to a dead server."""

    def __init__(
        self,
        base_url: str,
        *,
        root: str | None = None,
        timeout: float = 10.0,
        http: httpx.Client | None = None,
        max_consecutive_failures: int = 3,
        replay: ReplayContext | None = None,
        limiter: AdaptiveLimiter | None = None,
    ):
        self.api_base = base_url.rstrip("/")
        """Where paths are sent: the protocol's API base (the base URL and its route prefix, if any)."""
        self.root = (root or self.api_base).rstrip("/")
        """The origin root, for the paths a request asks at the root (``root=True``)."""
        self.replay = replay
        """The run's secrets (masked by value in evidence, variables in curl lines) and body folder;
        None: exchanges hide the key and token headers by name."""
        self.timeout = timeout
        self.http_override = http
        """The client given instead of sockets (an in-process app), if any."""
        self._http = http or httpx.Client(
            timeout=timeout, follow_redirects=False, verify=default_tls_context()
        )
        self._max_failures = max_consecutive_failures
        self._consecutive_failures = 0
        self.broken_reason: str | None = None
        self.requests = 0
        """How many requests were sent (the JSON report states it)."""
        self._counting = threading.Lock()
        self.observers: list[Callable[[Exchange], None]] = []
        """Called with every exchange that got an answer (the run tracks its cells' states with it)."""
        self.limiter = limiter if limiter is not None or http is not None else AdaptiveLimiter()
        """The budget of requests in flight every attempt waits for (``engine.limiter``; a parallel run
        shares one between its processes); None: no limit (an in-process app is asked one at a time)."""

    def close(self) -> None:
        self._http.close()

    @property
    def app(self) -> Any:
        """The ASGI app behind an in-process client (see ``engine.inprocess``), or None."""
        from amp_conformance.engine.inprocess import transport_of  # only an in-process client has one

        return getattr(transport_of(self._http), "app", None)

    def url_for(self, path: str, *, root: bool = False) -> str:
        if path.startswith(("http://", "https://")):
            return path
        return f"{self.root if root else self.api_base}{path}"

    def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: float | None = None,
    ) -> Exchange:
        """Send one request and return its exchange; raise a ToolError when nothing came back."""
        exchange = Exchange(method, url, dict(headers), body, replay=self.replay)
        if self.broken_reason is not None:
            exchange.error = f"not sent: {self.broken_reason}"
            raise ServerUnavailable(f"request not sent: {self.broken_reason}")
        with self._counting:
            self.requests += 1
        timeout = self.timeout
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded("the check ran out of time before this request")
            timeout = min(timeout, remaining)
        started = time.monotonic()
        try:
            self._receive(exchange, timeout, deadline=deadline)
        except httpx.TransportError as exc:
            if not _reset_before_any_byte(exc, exchange) or timeout - (time.monotonic() - started) <= 0:
                self._transport_failure(exchange, exc, timeout, started)
            exchange.elapsed = time.monotonic() - started
            exchange = self._retried(exchange, exc, timeout)
            try:
                self._receive(exchange, timeout - (time.monotonic() - started), deadline=deadline)
            except httpx.TransportError as again:
                self._transport_failure(exchange, again, timeout, started)
        self._consecutive_failures = 0
        for observe in self.observers:
            observe(exchange)
        return exchange

    def _transport_failure(
        self, exchange: Exchange, exc: httpx.TransportError, timeout: float, started: float
    ) -> NoReturn:
        """Record why nothing came back and raise it as the check's ToolError."""
        exchange.error = _describe_transport_error(exc, timeout)
        exchange.elapsed = time.monotonic() - started
        self._record_failure(exchange.error)
        failure = TransportFailure(f"{exchange.method} {exchange.url}: {exchange.error}")
        failure.exchange = exchange
        failure.unreachable = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
        raise failure from None

    def _retried(self, first: Exchange, exc: httpx.TransportError, timeout: float) -> Exchange:
        """The exchange that sends ``first``'s request once more, on a fresh connection, after the
        server closed or reset the one it went out on before any byte of a response came back.

        Why this is safe, and why only this: a server that answered a 500 and then closed a kept-alive
        connection makes the next request on it fail at once, although the server never read it (the
        stale keep-alive race). For GET and DELETE a repeat is harmless (idempotent, RFC 9110
        §9.2.2). For POST and PATCH, RFC 9112 §9.3.1 allows an automatic retry only when the client can
        tell the request was never applied; a connection closed before any response byte is the sign
        HTTP clients use for it, and it is not proof (a server may crash after applying a request), so
        the repeat is never silent: the failed attempt stays as evidence (``Exchange.retry_of``), both
        attempts show in the check's exchanges, its failure text and the report. A response byte, a
        timeout or a refused connection is never retried: then the server may have acted, or is gone
        (the breaker's business). httpx drops a connection that failed, so the retry opens a new one;
        a second failure is the check's error, as before."""
        first.error = f"{_describe_transport_error(exc, timeout)}; retried once on a fresh connection"
        with self._counting:
            self.requests += 1
        again = Exchange(
            first.method, first.url, first.request_headers, first.request_body, replay=self.replay
        )
        again.retry_of = first
        return again

    def _receive(self, exchange: Exchange, timeout: float, *, deadline: float | None = None) -> None:
        """One attempt: wait for a slot of the limiter, then send and read the answer within
        ``timeout`` seconds counted from then (a request queued behind the suite's own is never timed
        out for the queue; the check's ``deadline`` still ends the wait). The answer's latency, or its
        timeout, adapts the limit."""
        slot = self.limiter.acquire(deadline) if self.limiter is not None else None
        started = time.monotonic()
        if deadline is not None and slot is not None:
            timeout = min(timeout, deadline - started)
            if timeout <= 0:
                slot.done(answered=False)
                raise DeadlineExceeded("the check ran out of time waiting for its turn to send")
        try:
            self._send_and_read(exchange, timeout, started)
        except httpx.TimeoutException:
            if slot is not None:  # a timeout the check's deadline shortened says nothing of the server
                slot.done(answered=False, timed_out=timeout >= self.timeout)
            raise
        except BaseException:
            if slot is not None:
                slot.done(answered=False)
            raise
        if slot is not None:
            slot.done()

    def _send_and_read(self, exchange: Exchange, timeout: float, started: float) -> None:
        request = self._http.build_request(
            exchange.method,
            exchange.url,
            headers=exchange.request_headers,
            content=exchange.request_body,
            timeout=httpx.Timeout(timeout),
        )
        response = self._http.send(request, stream=True)
        try:
            exchange.status = response.status_code
            exchange.response_headers = {k.lower(): v for k, v in response.headers.items()}
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                if time.monotonic() - started > timeout:
                    raise httpx.ReadTimeout("response body did not finish in time")
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    exchange.truncated = True
                    break
            exchange.response_body = b"".join(chunks)[:MAX_RESPONSE_BYTES]
        finally:
            response.close()
        exchange.elapsed = time.monotonic() - started

    def _record_failure(self, reason: str) -> None:
        self._consecutive_failures += 1
        if self._consecutive_failures >= self._max_failures:
            self.broken_reason = (
                f"the server failed {self._consecutive_failures} requests in a row (last: {reason})"
            )


def at_once(connection: Connection, calls: Sequence[Callable[[], _T]]) -> list[_T]:
    """Each call's result, in order, the calls made at the same time (at most :data:`AT_ONCE_LIMIT`
    at once, each request waiting for a slot of the connection's limiter: the server sees no more
    than the limit allows) when ``connection`` goes over sockets; an in-process app is asked one at a
    time.

    For requests that do not depend on one another (refused probes, reads of a settled state): a
    distant server then costs one round trip for the lot instead of one each. The evidence is the
    same as one call after the other: each call's exchanges are recorded in the calls' order once all
    have ended (into the enclosing call's, when this one runs inside another), and the first call (in
    order) that raised raises again; the calls after it were sent too, and their exchanges are
    recorded as well."""
    if connection.http_override is not None or len(calls) < 2:
        return [call() for call in calls]

    def held(call: Callable[[], _T]) -> tuple[Any, BaseException | None, list[_Held]]:
        records: list[_Held] = []
        _held.records = records
        try:
            return call(), None, records
        except BaseException as exc:  # re-raised in the caller's thread, in call order
            return None, exc, records
        finally:
            _held.records = None

    outer: list[_Held] | None = getattr(_held, "records", None)  # this call inside another's
    pool = ThreadPoolExecutor(max_workers=min(AT_ONCE_LIMIT, len(calls)), thread_name_prefix="amp-at-once")
    try:
        ended = list(pool.map(held, calls))
    except BaseException:  # an interrupt while waiting: no wait for the requests still in flight
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    for _, _, records in ended:
        if outer is not None:
            outer.extend(records)
            continue
        for log, exchange in records:
            log.append(exchange)
    for _, error, _ in ended:
        if error is not None:
            raise error
    return [result for result, _, _ in ended]


def _reset_before_any_byte(exc: httpx.TransportError, exchange: Exchange) -> bool:
    """The connection was closed or reset before the response's first byte (never a timeout)."""
    if exchange.status is not None or exchange.retry_of is not None:
        return False
    return isinstance(exc, httpx.ReadError | httpx.WriteError | httpx.RemoteProtocolError)


def _describe_transport_error(exc: httpx.TransportError, timeout: float) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return f"could not connect within {timeout:.1f}s"
    if isinstance(exc, httpx.TimeoutException):
        return f"no complete response within {timeout:.1f}s"
    if isinstance(exc, httpx.ConnectError):
        return f"connection failed ({exc})"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"the server broke the HTTP exchange ({exc})"
    return f"{type(exc).__name__}: {exc}"


class Client:
    """Requests sent on behalf of one identity, recorded into one check's evidence."""

    def __init__(
        self,
        connection: Connection,
        *,
        headers: Mapping[str, str] | None = None,
        log: list[Exchange] | None = None,
        deadline: float | None = None,
    ):
        self.connection = connection
        self.headers = dict(headers or {})
        self.log = log if log is not None else []
        self.deadline = deadline

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = _NO_BODY,
        content: bytes | str | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str | None] | None = None,
        root: bool = False,
    ) -> Reply:
        """Send ``method path``. ``headers`` values of None remove this client's header of that name."""
        url = self.connection.url_for(path, root=root)
        if params:
            url = str(httpx.URL(url, params={k: v for k, v in params.items() if v is not None}))
        merged = dict(self.headers)
        body: bytes | None = None
        if json_body is not _NO_BODY:
            body = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
            merged["Content-Type"] = "application/json"
        elif content is not None:
            body = content.encode("utf-8") if isinstance(content, str) else content
            merged.setdefault("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            for existing in [k for k in merged if k.lower() == name.lower()]:
                del merged[existing]
            if value is not None:
                merged[name] = value
        try:
            exchange = self.connection.send(method, url, headers=merged, body=body, deadline=self.deadline)
        except TransportFailure as failure:
            if failure.exchange is not None:
                self._record(failure.exchange)
            raise
        self._record(exchange)
        return Reply(exchange)

    def _record(self, exchange: Exchange) -> None:
        """Log an exchange, after the attempt it retried (if any), so the evidence shows both; inside
        :func:`at_once` the pair waits, so the log keeps the calls' order whatever order they ended in."""
        held: list[_Held] | None = getattr(_held, "records", None)
        for one in (exchange.retry_of, exchange):
            if one is None:
                continue
            if held is not None:
                held.append((self.log, one))
            else:
                self.log.append(one)

    def get(self, path: str, **kwargs: Any) -> Reply:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, json_body: Any = _NO_BODY, **kwargs: Any) -> Reply:
        return self.request("POST", path, json_body=json_body, **kwargs)

    def patch(self, path: str, json_body: Any = _NO_BODY, **kwargs: Any) -> Reply:
        return self.request("PATCH", path, json_body=json_body, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Reply:
        return self.request("DELETE", path, **kwargs)
