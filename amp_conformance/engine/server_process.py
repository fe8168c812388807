"""Start the implementation under test (``--server-cmd``), wait until it is healthy, and stop it.

A CI gate must never leave a server behind: the server runs in its own process group (its children
too), which is stopped with SIGTERM and then SIGKILL after :data:`STOP_GRACE_SECONDS` on every way
out of the run: a normal end, an exception, Ctrl-C, SIGTERM. A small watchdog process stops the
group even when the suite itself is killed outright. The server's output goes to a log file whose
last :data:`LOG_TAIL_LINES` lines explain a server that would not start or died mid-run.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, TYPE_CHECKING, Any

import httpx
import pytest

from amp_conformance.engine.outcomes import ToolError
from amp_conformance.engine.text import printable

if TYPE_CHECKING:
    from amp_conformance.engine.protocol import AnyProtocol
    from amp_conformance.engine.run import Run

LOG_TAIL_LINES = 40
STOP_GRACE_SECONDS = 5.0
PORT_PLACEHOLDER = "{port}"

# Runs in its own session; blocks on a pipe from the suite. "stop" on the pipe means the suite
# stopped the server itself; end of file without it means the suite died: stop the group then.
_WATCHDOG = """
import os, signal, sys, time
pgid = int(sys.argv[1]); grace = float(sys.argv[2])
if sys.stdin.buffer.read() == b"stop":
    raise SystemExit(0)
def alive():
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    return True
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        os.killpg(pgid, sig)
    except OSError:
        raise SystemExit(0)
    end = time.monotonic() + grace
    while alive() and time.monotonic() < end:
        time.sleep(0.1)
"""


class ServerStartError(Exception):
    """The server command could not be started or never became healthy: exit 2 with this text."""


class ServerGone(ToolError):
    """The server process exited during the run; the remaining checks end as errors with this."""


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (the server binds it right after; a tiny race, as with any tool)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def parse_server_env(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs of ``--server-env``; ValueError on a malformed one."""
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or "\0" in pair:
            raise ValueError(f"--server-env takes KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def live_group_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are still running (zombies, which no reaper may collect in
    a container, do not count). Without /proc, any member counts."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except OSError:
            return []
        return [pgid]
    members: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


class ServerProcess:
    """``with ServerProcess("cmd --port {port}") as server: ... server.url ...``.

    ``{port}`` in the command (and in ``base_url``) is a free loopback port, also given to the server
    as ``$PORT``; with a ``base_url`` naming a port, that port.

    ``start`` raises :class:`ServerStartError` (after stopping what it started) when the command is
    not found, exits, or does not answer ``GET /health`` with a 2xx within ``startup_timeout``.
    """

    def __init__(
        self,
        command: str,
        *,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 30.0,
        log_path: Path | None = None,
        base_url: str | None = None,
        port: int | None = None,
        health_url: Callable[[str], str] | None = None,
    ):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ServerStartError(f"cannot parse --server-cmd {command!r}: {exc}") from None
        if not argv:
            raise ServerStartError("--server-cmd is empty")
        if startup_timeout <= 0:
            raise ServerStartError("--startup-timeout must be positive")
        given = base_url or ""
        fixed = None
        if given and PORT_PLACEHOLDER not in given:
            try:
                fixed = httpx.URL(given).port
            except (httpx.InvalidURL, TypeError, ValueError):
                raise ServerStartError(f"not an http(s) URL: {given!r}") from None
        self.port = port if port is not None else fixed if fixed is not None else free_port()
        self.argv = [arg.replace(PORT_PLACEHOLDER, str(self.port)) for arg in argv]
        self.url = given.replace(PORT_PLACEHOLDER, str(self.port)) or f"http://127.0.0.1:{self.port}"
        try:
            self.health_url = health_url(self.url) if health_url else f"{self.url.rstrip('/')}/health"
        except ValueError as exc:
            raise ServerStartError(str(exc)) from None
        self.env = {**os.environ, "PORT": str(self.port), **(env or {})}
        self.startup_timeout = startup_timeout
        self.keep_log = log_path is not None
        self.log_path = log_path or Path(tempfile.gettempdir()) / f"amp-server-{os.getpid()}-{self.port}.log"
        self._log: IO[bytes] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    # lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Spawn the command in a new process group and wait until it answers ``GET /health``."""
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = self.log_path.open("wb")
        except OSError as exc:
            self.stop()
            raise ServerStartError(f"cannot write the server log {self.log_path}: {exc.strerror}") from None
        try:
            self._process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        except FileNotFoundError:
            self.stop()
            raise ServerStartError(f"server command not found: {self.argv[0]}") from None
        except OSError as exc:
            self.stop()
            raise ServerStartError(
                f"cannot start the server command {self.argv[0]}: {exc.strerror}"
            ) from None
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(self._process.pid), str(STOP_GRACE_SECONDS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def _wait_healthy(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        last = "no answer yet"
        with httpx.Client(follow_redirects=False) as http:
            while True:
                code = self._process.poll()
                if code is not None:
                    self.keep_log = True
                    raise ServerStartError(self.describe_exit(code, "before it answered GET /health"))
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.keep_log = True
                    raise ServerStartError(
                        f"the server did not become healthy within {self.startup_timeout:g} s "
                        f"(GET {self.health_url}: {last})\n{self.log_tail_block()}"
                    )
                try:
                    reply = http.get(self.health_url, timeout=max(0.05, min(2.0, remaining)))
                except httpx.HTTPError as exc:
                    last = printable(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
                else:
                    if 200 <= reply.status_code < 300:
                        return
                    last = f"answered {reply.status_code}"
                time.sleep(0.05)

    def exit_code(self) -> int | None:
        """The server's exit code once it has exited, else None."""
        return None if self._process is None else self._process.poll()

    def stop(self) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after the grace period. Idempotent."""
        process, self._process = self._process, None
        if process is not None:
            pgid = process.pid
            for sig, grace in ((signal.SIGTERM, STOP_GRACE_SECONDS), (signal.SIGKILL, 2.0)):
                process.poll()
                if not live_group_members(pgid):
                    break
                with suppress(OSError):
                    os.killpg(pgid, sig)
                end = time.monotonic() + grace
                while time.monotonic() < end:
                    process.poll()
                    if not live_group_members(pgid):
                        break
                    time.sleep(0.02)
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=1)
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            with suppress(OSError):
                assert watchdog.stdin is not None
                watchdog.stdin.write(b"stop")
                watchdog.stdin.close()
            with suppress(subprocess.TimeoutExpired):
                watchdog.wait(timeout=2)
        log, self._log = self._log, None
        if log is not None:
            log.close()
        if not self.keep_log:
            with suppress(OSError):
                self.log_path.unlink()

    # what the server said ---------------------------------------------------------------------

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> list[str]:
        """The last ``lines`` lines of the server log, made printable."""
        if self._log is not None:
            with suppress(OSError, ValueError):
                self._log.flush()
        try:
            data = self.log_path.read_bytes()[-256 * 1024 :]
        except OSError:
            return []
        return [printable(line) for line in data.decode("utf-8", "replace").splitlines()[-lines:]]

    def log_tail_block(self) -> str:
        """The log tail framed for a message; says so when the log is empty."""
        tail = self.log_tail()
        if not tail:
            return f"(the server wrote nothing to its log {self.log_path})"
        header = f"--- last {len(tail)} lines of the server log ({self.log_path}) ---"
        return "\n".join([header, *tail, "--- end of the server log ---"])

    def describe_exit(self, code: int, when: str) -> str:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return f"the server command {how} {when}\n{self.log_tail_block()}"


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into KeyboardInterrupt while a server runs, so that pytest ends the
    session (cleanup, reports) and the server is stopped as on Ctrl-C."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) not in (signal.SIG_DFL, None):
            continue  # the command's own handler (an interrupt is INCOMPLETE) already turns it
        with suppress(ValueError, OSError):  # not the main thread: leave signals alone
            previous[sig] = signal.signal(sig, interrupt)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class ServerWatch:
    """A pytest plugin: once the server process has exited, each remaining check ends as an error
    that quotes the log tail, and the run's connection stops sending (cleanup is skipped)."""

    def __init__(self, server: ServerProcess, find_run: Callable[[pytest.Config], Run | None]):
        self.server = server
        self.find_run = find_run
        self.gone: str | None = None
        self._config: pytest.Config | None = None

    def pytest_configure(self, config: pytest.Config) -> None:
        self._config = config

    def _check(self) -> str | None:
        if self.gone is None:
            code = self.server.exit_code()
            if code is not None:
                self.server.keep_log = True
                self.gone = self.server.describe_exit(code, "during the run")
                run = self.find_run(self._config) if self._config is not None else None
                if run is not None and run.session is not None and run.broken_reason is None:
                    run.session.mark_unavailable(self.gone.splitlines()[0].removeprefix("the "))
        return self.gone

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        gone = self._check()
        if gone is not None:
            # the log tail is shown once (by the check that was running, and at the end of the run),
            # not in each of the remaining checks
            raise ServerGone(f"{gone.splitlines()[0]} (its log tail is printed at the end of the run)")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The check that was running when the server died: its failure quotes the log tail too."""
        if report.when != "call" or report.passed or self.gone is not None or self._check() is None:
            return
        block = self.server.log_tail_block()
        if isinstance(report.longrepr, str):
            report.longrepr += "\n" + block
        run = self.find_run(self._config) if self._config is not None else None
        result = run.results.get(report.nodeid) if run is not None else None
        if result is not None and run is not None:
            run.results[report.nodeid] = dataclasses.replace(result, message=result.message + "\n" + block)


Runner = Callable[[dict[str, Any], httpx.Client | None, list[object]], int]
"""Runs the suite with option values, an HTTP client (or None) and extra pytest plugins."""


def run_with_server(
    values: dict[str, Any],
    runner: Runner,
    find_run: Callable[[pytest.Config], Run | None],
    protocol: AnyProtocol,
) -> int:
    """The command's ``--server-cmd`` path: start the server, run the suite against it, stop it on
    every way out. Returns the exit code (2 when the server cannot be started or the run is
    interrupted)."""
    from amp_conformance.engine.configuration import build_options
    from amp_conformance.engine.options import UsageError

    log = values.get("amp_server_log")
    try:
        server = ServerProcess(
            str(values.get("amp_server_cmd")),
            env=parse_server_env(values.get("amp_server_env") or []),
            startup_timeout=float(values.get("amp_startup_timeout") or 30.0),
            log_path=Path(log) if log else None,
            base_url=values.get("amp_base_url"),
            health_url=protocol.health_url,
        )
        values["amp_base_url"] = server.url
        build_options(values, protocol)  # usage errors before anything starts
    except (ServerStartError, UsageError, ValueError) as exc:
        print(f"amp-conformance: {exc}", file=sys.stderr)
        return 2
    watch = ServerWatch(server, find_run)
    try:
        with stop_on_signals():
            try:
                server.start()
            except ServerStartError as exc:
                print(f"amp-conformance: {exc}", file=sys.stderr)
                return 2
            where = f"{server.url} (log: {server.log_path})"
            print(f"amp-conformance: started the server at {where}", file=sys.stderr, flush=True)
            code = runner(values, None, [watch])
    except KeyboardInterrupt:
        print("amp-conformance: interrupted; the server was stopped", file=sys.stderr)
        return 2
    finally:
        server.stop()
    if watch.gone is not None:  # the log tail, once (the remaining checks' errors do not quote it)
        print(f"amp-conformance: {watch.gone}", file=sys.stderr)
    return code
