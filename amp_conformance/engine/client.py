"""The recording HTTP client every check talks through.

Each request becomes an :class:`Exchange`: what was sent, what came back, how long it took. A failing
check shows its exchanges with secrets masked and a curl line that reproduces the request, so an
implementer can see the problem without rerunning the suite. Transport trouble never escapes as a
raw httpx exception: it becomes a :class:`~amp_conformance.engine.outcomes.ToolError` (an *error*
outcome). A request safe to repeat is repeated after a broken attempt (bounded, with backoff); one that
is not is never sent again blind (:class:`~amp_conformance.engine.outcomes.AmbiguousExchange`). After a
few consecutive failures the connection asks ``/health`` and stops sending only when that fails too, so
a dead server costs one clear error per check and a flaky network costs nothing.
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
import tenacity

from amp_conformance.engine.exchange import MAX_RESPONSE_BYTES, Exchange
from amp_conformance.engine.limiter import AdaptiveLimiter
from amp_conformance.engine.network import NetworkLog
from amp_conformance.engine.outcomes import (
    AmbiguousExchange,
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

#: Attempts of a request safe to repeat (the first included).
ATTEMPTS = 3

#: Methods repeated after a broken attempt (idempotent, RFC 9110 §9.2.2; PUT is not sent by the suite).
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "DELETE", "PUT"})

#: Idle kept-alive connections are dropped after this many seconds: below the idle timeouts of common
#: servers (uvicorn, Node: 5 s), so the client never sends on a connection the server is closing (the
#: stale keep-alive race, which would make a POST ambiguous on a healthy network).
KEEPALIVE_EXPIRY = 2.0

_Held = tuple[list[Exchange], Exchange]
_held = threading.local()
"""Per thread: the (log, exchange) pairs an :func:`at_once` call holds back, to record in call order."""


class Reply:
    """A received response, with JSON access that fails the check (not the tool) on a bad body."""

    def __init__(self, exchange: Exchange):
        self.exchange = exchange
        self._headers = httpx.Headers(exchange.response_headers)
        self._parsed: Any = _NO_BODY

    def _answered(self) -> None:
        """Raise the exchange's transport failure when no response came: a missing response is never
        judged (a status 0 would read as a finding). Such a Reply only holds a place among a step's
        replies (a broken attempt a repeat recovered)."""
        if self.exchange.status is None or self.exchange.error is not None:
            failure = TransportFailure(
                f"{self.exchange.method} {self.exchange.url}: no response to judge "
                f"({self.exchange.error or 'never answered'})"
            )
            failure.exchange = self.exchange
            raise failure

    @property
    def status(self) -> int:
        self._answered()
        assert self.exchange.status is not None
        return self.exchange.status

    @property
    def headers(self) -> httpx.Headers:
        self._answered()
        return self._headers

    @property
    def content(self) -> bytes:
        self._answered()
        return self.exchange.response_body

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
        health_path: str = "/health",
        backoff: float = 0.1,
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
            timeout=timeout,
            follow_redirects=False,
            verify=default_tls_context(),
            limits=httpx.Limits(
                max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_EXPIRY
            ),
        )
        self._max_failures = max_consecutive_failures
        self._consecutive_failures = 0
        self._breaker = threading.Lock()
        self._probing = False
        self.health_url = self.url_for(health_path)
        """What the breaker asks before giving up on the server (as the session's preflight does)."""
        self.backoff = backoff
        """The first wait before a repeat, in seconds (doubled each time, with as much jitter)."""
        self.broken_reason: str | None = None
        self.requests = 0
        """How many requests were sent (the JSON report states it)."""
        self._counting = threading.Lock()
        self.network = NetworkLog()
        """What the network did (the report's ``network`` block): broken attempts by kind, repeats."""
        self.sporadic_losses = 0
        """Runs of consecutive failures after which ``/health`` still answered (the breaker held)."""
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
        repeatable: bool | None = None,
    ) -> Exchange:
        """Send one request and return its exchange; raise a ToolError when nothing came back.

        ``repeatable``: None, by method (:data:`IDEMPOTENT`); True, the caller declares the request a
        read safe to repeat; False, never repeated. A request safe to repeat is sent again after a
        broken attempt (up to :data:`ATTEMPTS`, exponential backoff with jitter, within ``deadline``);
        one that is not raises :class:`AmbiguousExchange`, unless its connection never opened (then
        nothing was sent, and it is repeated too). Every attempt stays in the evidence."""
        if repeatable is None:
            repeatable = method.upper() in IDEMPOTENT
        if self.broken_reason is not None:
            raise ServerUnavailable(f"request not sent: {self.broken_reason}")
        if deadline is not None and deadline - time.monotonic() <= 0:
            raise DeadlineExceeded("the check ran out of time before this request")
        last: list[Exchange] = []
        reached = [False]  # a broken attempt that may have reached the server

        def attempt() -> Exchange:
            exchange = Exchange(method, url, dict(headers), body, replay=self.replay)
            if last:
                exchange.retry_of = last[-1]
                last[-1].error = f"{last[-1].error}; attempt {len(last)}, sent again"
                self.network.count_repeated()
            last.append(exchange)
            return self._attempt(exchange, deadline)

        def worth_repeating(exc: BaseException) -> bool:
            if not isinstance(exc, _Broken) or self.broken_reason is not None:
                return False
            reached[0] = reached[0] or not exc.nothing_sent
            return repeatable or exc.nothing_sent

        retrying = tenacity.Retrying(
            stop=tenacity.stop_any(tenacity.stop_after_attempt(ATTEMPTS), _StopBefore(deadline)),
            wait=tenacity.wait_exponential(multiplier=self.backoff, max=8 * self.backoff)
            + tenacity.wait_random(0, self.backoff),
            retry=tenacity.retry_if_exception(worth_repeating),
            reraise=True,
        )
        try:
            exchange = retrying(attempt)
        except _Broken as broken:
            self._give_up(broken, repeatable, len(last))
        self._consecutive_failures = 0
        for observe in self.observers:
            observe(exchange)
        if reached[0] and method.upper() == "DELETE" and not 200 <= (exchange.status or 0) < 300:
            # idempotent is the same effect, not the same answer: a repeat of a DELETE the first attempt
            # applied may be told 404, 410 or 409 (a server keeping deleted cells readable)
            failure = AmbiguousExchange(
                f"{method} {exchange.url}: answered {exchange.status} after a broken first attempt "
                "(which may have deleted it)"
            )
            failure.exchange = exchange
            raise failure
        return exchange

    def _attempt(self, exchange: Exchange, deadline: float | None) -> Exchange:
        """One attempt: :meth:`_receive` once, a transport failure recorded and raised as :class:`_Broken`."""
        timeout = self.timeout
        if deadline is not None:
            timeout = max(0.001, min(timeout, deadline - time.monotonic()))
        with self._counting:
            self.requests += 1
        started = time.monotonic()
        try:
            self._receive(exchange, timeout, deadline=deadline)
        except httpx.TransportError as exc:
            if not isinstance(exc, httpx.NetworkError | httpx.TimeoutException | httpx.RemoteProtocolError):
                exchange.error = _describe_transport_error(exc, timeout)
                exchange.elapsed = time.monotonic() - started
                self._fail(exchange)  # not the network's doing (a bad URL scheme, a proxy setting)
            exchange.broken = _broken_kind(exc, exchange)
            exchange.error = _describe_transport_error(exc, timeout)
            exchange.elapsed = time.monotonic() - started
            self.network.count_broken(exchange.broken)
            self._record_failure(exchange.error)
            raise _Broken(exchange, exc) from None
        return exchange

    def _give_up(self, broken: _Broken, repeatable: bool, attempts: int) -> NoReturn:
        """Raise the check's error for a request whose last attempt broke: a request not safe to repeat
        that may have reached the server is ambiguous, anything else a plain transport failure."""
        exchange = broken.exchange
        if not repeatable and not broken.nothing_sent:
            exchange.error = (
                f"{exchange.error}; a {exchange.method} is never sent again blind (it may have been applied)"
            )
            failure: TransportFailure = AmbiguousExchange(
                f"{exchange.method} {exchange.url}: {exchange.error}"
            )
        else:
            if attempts > 1:
                exchange.error = f"{exchange.error} ({attempts} attempts)"
            failure = TransportFailure(f"{exchange.method} {exchange.url}: {exchange.error}")
        failure.exchange = exchange
        failure.unreachable = isinstance(broken.cause, httpx.ConnectError | httpx.ConnectTimeout)
        raise failure from None

    def _fail(self, exchange: Exchange) -> NoReturn:
        failure = TransportFailure(f"{exchange.method} {exchange.url}: {exchange.error}")
        failure.exchange = exchange
        raise failure from None

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
        """Count a broken attempt; at :attr:`_max_failures` in a row, ask ``/health`` (one thread does):
        the breaker trips only when that fails too, else the run was a sporadic loss and the count
        starts again."""
        with self._breaker:
            self._consecutive_failures += 1
            if self._consecutive_failures < self._max_failures or self._probing:
                return
            self._probing = True
            failures = self._consecutive_failures
        try:
            down = self._health_fails()
        finally:
            with self._breaker:
                self._probing = False
                if down is None:
                    self._consecutive_failures = 0
                    self.sporadic_losses += 1
                elif self.broken_reason is None:
                    self.broken_reason = (
                        f"the server failed {failures} requests in a row (last: {reason}) "
                        f"and GET {self.health_url} {down}"
                    )

    def _health_fails(self) -> str | None:
        """Why ``GET`` :attr:`health_url` says the server is down (no response, or a gateway's 502-504:
        nothing behind it), None when it answered; one attempt with the full timeout."""
        probe = Exchange("GET", self.health_url, {}, None, replay=self.replay)
        with self._counting:
            self.requests += 1
        try:
            self._receive(probe, self.timeout)
        except httpx.TransportError as exc:
            return f"failed too ({_describe_transport_error(exc, self.timeout)})"
        if probe.status in (502, 503, 504):
            return f"answered {probe.status} too"
        return None


class _Broken(Exception):
    """An attempt that got no complete response (inside :meth:`Connection.send`, where it may be repeated)."""

    def __init__(self, exchange: Exchange, cause: httpx.TransportError):
        super().__init__(exchange.error)
        self.exchange = exchange
        self.cause = cause
        self.nothing_sent = isinstance(cause, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
        """The connection never opened: the server cannot have seen the request."""


class _StopBefore(tenacity.stop.stop_base):
    """Stop repeating when the wait before the next attempt would end past the check's deadline."""

    def __init__(self, deadline: float | None):
        self.deadline = deadline

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        if self.deadline is None:
            return False
        return time.monotonic() + (retry_state.upcoming_sleep or 0.0) >= self.deadline


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


def _broken_kind(exc: httpx.TransportError, exchange: Exchange) -> str:
    """``refused``, ``timeout``, ``cut`` (the response began, its body broke) or ``reset``."""
    if isinstance(exc, httpx.ConnectError):
        return "refused"
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    return "cut" if exchange.status is not None else "reset"


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
        repeatable: bool | None = None,
    ) -> Reply:
        """Send ``method path``. ``headers`` values of None remove this client's header of that name.

        ``repeatable`` (see :meth:`Connection.send`): True for a POST that only reads (a search), so a
        broken attempt is sent again instead of raising :class:`AmbiguousExchange`."""
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
            exchange = self.connection.send(
                method, url, headers=merged, body=body, deadline=self.deadline, repeatable=repeatable
            )
        except TransportFailure as failure:
            if failure.exchange is not None:
                self._record(failure.exchange)
            raise
        self._record(exchange)
        return Reply(exchange)

    def _record(self, exchange: Exchange) -> None:
        """Log an exchange after the broken attempts it repeated (if any), so the evidence shows each;
        inside :func:`at_once` they wait, so the log keeps the calls' order whatever order they ended in."""
        held: list[_Held] | None = getattr(_held, "records", None)
        for one in exchange.attempts:
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
