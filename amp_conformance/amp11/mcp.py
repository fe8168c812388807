"""An MCP client at the frame level, over a subprocess's stdin/stdout (newline-delimited JSON-RPC 2.0).

A conformance suite has to report what a server actually wrote, so nothing here hides a bad frame:
every line sent and received is recorded, each request becomes an :class:`McpExchange` (the raw
frames are the evidence), and every way a server can misbehave (hang, exit, write garbage, answer
with the wrong id) ends in a bounded time as a :class:`McpTransportError` with a one-line reason and
the tail of the server's stderr. The server runs in its own process group so it can be stopped with
its children: stdin closed first, then SIGTERM to the group, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import DeadlineExceeded, ServerUnavailable, TransportFailure
from amp_conformance.engine.text import shown

MCP_PROTOCOL_VERSION = "2025-03-26"
MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_FRAMES_KEPT = 20000
MAX_LINES_PER_EXCHANGE = 500  # lines kept as one request's evidence (a flooding server is cut short)
MAX_QUEUED_LINES = 10000  # unread stdout lines; beyond this the server blocks on its own writes
STDERR_LINES_KEPT = 200
STOP_GRACE_SECONDS = 2.0
BROKEN_GRACE_SECONDS = 0.2
TERM_GRACE_SECONDS = 3.0
_EOF = b""


class McpTransportError(TransportFailure):
    """No usable answer came back: the server hung, exited, or wrote something that is not a reply."""

    exchange: McpExchange | None

    def __init__(self, message: str, *, kind: str, exchange: McpExchange | None = None):
        super().__init__(message)
        self.kind = kind
        self.exchange = exchange
        self.unreachable = kind in {"start", "exited"}


@dataclass
class Frame:
    """One line on the wire, as the session saw it."""

    direction: str  # "sent" | "received"
    at: float  # seconds since the session started
    text: str  # clipped to 2000 characters
    is_json: bool = True  # received lines: whether the whole line parsed as JSON


@dataclass
class McpExchange(Exchange):
    """One JSON-RPC request (or notification, or raw line) and every frame received while waiting."""

    rpc_id: int | None = None
    message: dict[str, Any] | None = None
    received: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)
    dropped: int = 0  # lines received beyond MAX_LINES_PER_EXCHANGE
    replay_command: str = ""

    def curl(self) -> str:
        """A shell line that replays this request against the same command (after the handshake)."""
        sent = (self.request_body or b"").decode("utf-8", errors="replace")
        handshake = [
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _initialize_params()}),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ]
        lines = " ".join(shlex.quote(line) for line in [*handshake, sent])
        return f"printf '%s\\n' {lines} | {self.replay_command}"

    def as_dict(self) -> dict[str, Any]:
        """The report's exchange: the frame sent as the request body, and every line received while
        waiting (notifications, stray or non-JSON lines, then the reply) as the response body."""
        entry = super().as_dict()
        received = "\n".join(self.received)
        limit = 16384
        if len(received) > limit:
            received = f"{received[:limit]}... [{len(received) - limit} more characters]"
        entry["response_body"] = received
        return entry

    def describe(self) -> str:
        """The frames, ``>`` sent and ``<`` received, for failure messages."""
        lines = [f"> {_clip((self.request_body or b'').decode('utf-8', errors='replace'))}"]
        lines += [f"< {_clip(line)}" for line in self.received]
        if self.error is not None:
            lines.append(f"< (no reply: {self.error})")
        elif not self.received:
            lines.append("< (nothing received)")
        return "\n".join(lines)


def _clip(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit} more characters]"


def _initialize_params(client_version: str = "0") -> dict[str, Any]:
    return {
        "protocolVersion": MCP_PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "amp-conformance", "version": client_version},
    }


def split_command(command: str | Sequence[str]) -> list[str]:
    """A command line as an argument list (shell-like quoting, no shell)."""
    args = shlex.split(command) if isinstance(command, str) else list(command)
    if not args:
        raise ValueError("the MCP server command is empty")
    return args


class McpSession:
    """One server process and the JSON-RPC conversation with it."""

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        timeout: float = 10.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ):
        self.args = split_command(command)
        self.timeout = timeout
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.frames: list[Frame] = []
        self.server_info: dict[str, Any] = {}
        self.initialize_result: dict[str, Any] | None = None
        self.broken_reason: str | None = None
        self.returncode: int | None = None
        self.stopped_by: str | None = None  # "stdin" (exited by itself), "SIGTERM" or "SIGKILL"
        self._process: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes] = queue.Queue(maxsize=MAX_QUEUED_LINES)
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES_KEPT)
        self._stderr_thread: threading.Thread | None = None
        self._next_id = 1
        self._started_at = time.monotonic()
        self._lock = threading.Lock()
        self._consecutive_timeouts = 0
        self.requests = 0
        """Frames this session sent to the server (requests and notifications)."""

    # -- process -------------------------------------------------------------------------------------

    @property
    def command_text(self) -> str:
        return shlex.join(self.args)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> None:
        """Start the server in a new process group; a command that cannot start is a ToolError."""
        self._started_at = time.monotonic()
        try:
            self._process = subprocess.Popen(
                self.args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            self.broken_reason = f"could not start {shown(self.command_text)}: {exc}"
            raise McpTransportError(self.broken_reason, kind="start") from None
        assert self._process.stdout is not None and self._process.stderr is not None
        threading.Thread(target=self._pump_stdout, args=(self._process.stdout,), daemon=True).start()
        self._stderr_thread = threading.Thread(
            target=self._pump_stderr, args=(self._process.stderr,), daemon=True
        )
        self._stderr_thread.start()

    def _pump_stdout(self, stream: Any) -> None:
        oversize = False
        try:
            while True:
                line: bytes = stream.readline(MAX_LINE_BYTES + 1)
                if not line:
                    break
                if oversize:  # the tail of a line already reported as too long
                    oversize = not line.endswith(b"\n")
                    continue
                if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                    oversize = True
                    line = line[:4096] + b"... [line longer than %d bytes]" % MAX_LINE_BYTES
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(queue.Full):
                self._lines.put(_EOF, timeout=1.0)

    def _pump_stderr(self, stream: Any) -> None:
        try:
            for raw in iter(lambda: stream.readline(65536), b""):
                self._stderr.append(_clip(raw.decode("utf-8", errors="replace").rstrip("\n")))
        except (OSError, ValueError):
            pass

    def stderr_tail(self, lines: int = 20) -> str:
        """The last lines the server wrote to stderr (log output is tolerated and kept)."""
        return "\n".join(list(self._stderr)[-lines:])

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def close(self) -> int | None:
        """Stop the server: close stdin, then SIGTERM the group, then SIGKILL. Returns the exit code."""
        process = self._process
        if process is None:
            return self.returncode
        if process.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                process.stdin.close()
        already = process.poll() is not None
        # a server that already stopped answering gets a short grace, a working one a polite one
        grace = STOP_GRACE_SECONDS if self.broken_reason is None else BROKEN_GRACE_SECONDS
        if self._wait(process, grace):
            stopped_by = "exited" if already else "stdin"
        else:
            stopped_by = "SIGTERM"
            self._signal_group(process, signal.SIGTERM)
            if not self._wait(process, TERM_GRACE_SECONDS):
                stopped_by = "SIGKILL"
                self._signal_group(process, signal.SIGKILL)
                self._wait(process, TERM_GRACE_SECONDS)
        if self.stopped_by is None:
            self.stopped_by = stopped_by
        self._signal_group(process, signal.SIGKILL)  # whatever the server left behind in its group
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
        self.returncode = process.returncode
        if self.broken_reason is None:
            self.broken_reason = "the session was closed"
        return self.returncode

    @staticmethod
    def _wait(process: subprocess.Popen[bytes], seconds: float) -> bool:
        try:
            process.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    @staticmethod
    def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)

    def __enter__(self) -> McpSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- frames --------------------------------------------------------------------------------------

    def _record(self, direction: str, text: str, *, is_json: bool = True) -> None:
        if len(self.frames) < MAX_FRAMES_KEPT:
            at = round(time.monotonic() - self._started_at, 4)
            self.frames.append(Frame(direction, at, _clip(text), is_json))

    def _write(self, data: bytes, timeout: float) -> None:
        """Write one frame; a server that stops reading stdin cannot block the suite past ``timeout``."""
        process = self._process
        if process is None or process.stdin is None:
            raise McpTransportError("the MCP session was not started", kind="start")
        problem: list[BaseException] = []

        def write() -> None:
            try:
                assert process.stdin is not None
                process.stdin.write(data)
                process.stdin.flush()
            except (OSError, ValueError) as exc:
                problem.append(exc)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        writer.join(timeout)
        if writer.is_alive():
            raise McpTransportError(
                f"the server did not read its stdin within {timeout:.1f}s", kind="timeout"
            )
        if problem:
            raise McpTransportError(self._exit_text("stdin is closed"), kind="exited")

    def _exit_text(self, what: str) -> str:
        process = self._process
        code = None
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = process.wait(timeout=1.0)
        detail = f"the server exited (code {code})" if code is not None else "the server closed its stdout"
        if self._stderr_thread is not None:
            self._stderr_thread.join(0.5)  # let the last lines of an exiting server arrive
        return f"{what}: {detail}" + self.stderr_hint()

    def stderr_hint(self, lines: int = 3, limit: int = 300) -> str:
        """``; stderr: ...``: the server's last stderr lines on one line (for one-line reasons), or ""."""
        tail = [line.strip() for line in list(self._stderr)[-lines:] if line.strip()]
        if not tail:
            return ""
        return "; stderr: " + _clip(" | ".join(tail), limit)

    def _new_exchange(self, method: str, label: str, frame: bytes, rpc_id: int | None) -> McpExchange:
        self.requests += 1
        return McpExchange(
            method=method,
            url=f"mcp:{label}",
            request_headers={},
            request_body=frame,
            rpc_id=rpc_id,
            replay_command=self.command_text,
        )

    def _budget(self, timeout: float | None, deadline: float | None) -> float:
        budget = self.timeout if timeout is None else timeout
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded("the check ran out of time before this request")
            budget = min(budget, remaining)
        return budget

    def _ensure_usable(self) -> None:
        if self.broken_reason is not None:
            raise ServerUnavailable(f"request not sent: {self.broken_reason}")

    def send_line(
        self,
        text: str,
        *,
        method: str = "(raw)",
        label: str = "raw",
        rpc_id: int | None = None,
        wait_for: Any = None,
        timeout: float | None = None,
        deadline: float | None = None,
        log: list[Exchange] | None = None,
    ) -> McpExchange:
        """Write one line and, if ``wait_for`` is not None, wait for the response with that id.

        ``wait_for=None`` sends without waiting (notifications). Use ``wait_for="any"`` to accept the
        first response frame whatever its id (malformed-frame probes, answered with ``id: null``).
        """
        self._ensure_usable()
        budget = self._budget(timeout, deadline)
        frame = text.encode("utf-8") + b"\n"
        exchange = self._new_exchange(method, label, frame, rpc_id)
        if log is not None:
            log.append(exchange)
        started = time.monotonic()
        with self._lock:
            try:
                self._record("sent", text)
                self._write(frame, budget)
                if wait_for is not None:
                    self._await(exchange, wait_for, started + budget, budget)
            except McpTransportError as failure:
                exchange.error = str(failure)
                exchange.elapsed = time.monotonic() - started
                failure.exchange = exchange
                self._note_failure(failure)
                raise
        exchange.elapsed = time.monotonic() - started
        self._consecutive_timeouts = 0
        return exchange

    def _note_failure(self, failure: McpTransportError) -> None:
        if failure.kind == "timeout":
            self._consecutive_timeouts += 1
            if self._consecutive_timeouts >= 2:
                self.broken_reason = (
                    f"the server did not answer 2 requests in a row within --timeout {self.timeout:g}s "
                    f"(last: {failure}); no verdict on what is left"
                )
        else:
            self.broken_reason = str(failure)

    def _await(self, exchange: McpExchange, wait_for: Any, until: float, budget: float) -> None:
        while True:
            remaining = until - time.monotonic()
            if remaining <= 0:
                raise McpTransportError(self._timeout_text(exchange, budget), kind="timeout")
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                raise McpTransportError(self._timeout_text(exchange, budget), kind="timeout") from None
            if line == _EOF:
                with contextlib.suppress(queue.Full):
                    self._lines.put_nowait(_EOF)  # later readers see the end too
                raise McpTransportError(self._exit_text("no reply"), kind="exited")
            text = line.decode("utf-8", errors="replace").rstrip("\r\n")
            kept = len(exchange.received) < MAX_LINES_PER_EXCHANGE
            if kept:
                exchange.received.append(text)
            else:
                exchange.dropped += 1
            if not text.strip():
                self._record("received", text)
                continue
            try:
                message = json.loads(text)
            except (ValueError, RecursionError):
                self._record("received", text, is_json=False)
                if len(exchange.stray) < MAX_LINES_PER_EXCHANGE:
                    exchange.stray.append(text)
                continue
            self._record("received", text)
            if line.rstrip(b"\r\n") == (exchange.request_body or b"").rstrip(b"\n"):
                # `cat`: the suite's own line came back, which is no reply (and no server request)
                raise McpTransportError(
                    "the process echoed the request back instead of answering it (no JSON-RPC response)",
                    kind="protocol",
                )
            if self._is_reply(message, exchange, wait_for):
                if not kept:  # the reply is always evidence, after a count of what was not kept
                    exchange.received += [f"... [{exchange.dropped - 1} lines not kept]", text]
                exchange.message = message
                exchange.response_body = line.rstrip(b"\r\n")
                return
            if isinstance(message, dict) and isinstance(message.get("method"), str) and "id" in message:
                self._answer_server_request(message)
                continue
            if isinstance(message, dict) and isinstance(message.get("method"), str):
                continue  # a notification: tolerated
            if len(exchange.stray) < MAX_LINES_PER_EXCHANGE:
                exchange.stray.append(text)

    @staticmethod
    def _is_reply(message: Any, exchange: McpExchange, wait_for: Any) -> bool:
        if not isinstance(message, dict) or "method" in message:
            return False
        if "result" not in message and "error" not in message:
            return False
        if wait_for == "any":
            return True
        reply_id = message.get("id")
        if type(reply_id) is int and reply_id == wait_for:
            return True
        # A string echo of a numeric id is accepted so the session keeps going; INIT-07 reports it.
        return isinstance(reply_id, str) and reply_id == str(wait_for)

    def _answer_server_request(self, message: dict[str, Any]) -> None:
        """Server-to-client requests: ``ping`` gets an empty result, anything else -32601."""
        if message.get("method") == "ping":
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id"), "result": {}}
        else:
            reply = {
                "jsonrpc": "2.0",
                "id": message.get("id"),
                "error": {"code": -32601, "message": "the conformance client offers no such method"},
            }
        text = json.dumps(reply)
        self._record("sent", text)
        with contextlib.suppress(McpTransportError):
            self._write(text.encode("utf-8") + b"\n", self.timeout)

    def _timeout_text(self, exchange: McpExchange, budget: float) -> str:
        text = f"no reply within {budget:.1f}s"
        if budget >= self.timeout:  # the per-response timeout, not the check's deadline, ran out
            text += " (the timeout: a server this slow needs a larger --timeout)"
        if exchange.stray:
            text += f"; stdout carried {len(exchange.stray)} line(s) that are not replies, first: "
            text += shown(_clip(exchange.stray[0], 200))
        if not self.alive:
            text = self._exit_text(text)
        return text

    # -- JSON-RPC ------------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        label: str | None = None,
        timeout: float | None = None,
        deadline: float | None = None,
        log: list[Exchange] | None = None,
    ) -> McpExchange:
        """Send a request and return its exchange, with ``exchange.message`` the matching reply."""
        rpc_id = self._next_id
        self._next_id += 1
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": rpc_id, "method": method}
        if params is not None:
            frame["params"] = dict(params)
        return self.send_line(
            json.dumps(frame, ensure_ascii=False),
            method=method,
            label=label or method,
            rpc_id=rpc_id,
            wait_for=rpc_id,
            timeout=timeout,
            deadline=deadline,
            log=log,
        )

    def notify(
        self, method: str, params: Mapping[str, Any] | None = None, *, log: list[Exchange] | None = None
    ) -> McpExchange:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = dict(params)
        return self.send_line(json.dumps(frame), method=method, label=method, log=log)

    def initialize(self, *, client_version: str = "0", log: list[Exchange] | None = None) -> McpExchange:
        """``initialize`` then ``notifications/initialized``; a session that cannot do this is unusable."""
        try:
            exchange = self.request("initialize", _initialize_params(client_version), log=log)
        except McpTransportError as failure:
            self.broken_reason = f"initialize failed: {failure}"
            raise
        message = exchange.message or {}
        result = message.get("result")
        if not isinstance(result, dict):
            self.broken_reason = (
                f"initialize was not answered with a result: {_clip(json.dumps(message), 300)}"
            )
            raise McpTransportError(self.broken_reason, kind="protocol", exchange=exchange)
        self.initialize_result = result
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        self.notify("notifications/initialized", log=log)
        return exchange

    def list_tools(self, *, log: list[Exchange] | None = None, deadline: float | None = None) -> McpExchange:
        return self.request("tools/list", {}, log=log, deadline=deadline)

    def call_tool(
        self,
        name: str,
        arguments: Any,
        *,
        timeout: float | None = None,
        deadline: float | None = None,
        log: list[Exchange] | None = None,
    ) -> McpExchange:
        return self.request(
            "tools/call",
            {"name": name, "arguments": arguments},
            label=name,
            timeout=timeout,
            deadline=deadline,
            log=log,
        )
