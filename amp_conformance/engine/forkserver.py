"""Workers forked from a process that has already imported what they need.

A parallel run's workers each import pytest, httpx, jsonschema, the engine and the protocol's check
modules before their first request: about 0.6 CPU-seconds apiece, which eight workers pay at once on
two cores. One *fork server* imports all of that once, while the controller does its own start-up
and preflight (the command starts it with its first line, :func:`start_early`; else the controller
at its configure), and forks a worker for each launcher xdist starts (``engine.worker_launcher``,
given to xdist as the worker's ``python``). The forked worker then reads execnet's bootstrap from
its own streams, as a fresh interpreter would, and runs as any xdist worker does; pytest finds the
check modules already imported. It imports them once, with the environment the command started
with; each worker then runs with its launcher's environment (what a module reads from the
environment as it is imported, it read then).

The fork server is single-threaded (it forks), listens on a socket in a 0700 folder of its own,
reaps its workers and tells each launcher its worker's status, kills a worker whose launcher has gone
(xdist's kill), and ends when the controller closes its standard input. Without ``fork`` and file
descriptor passing (not Linux), with ``AMP_CONFORMANCE_FORK_SERVER=0`` (the switch: on by default,
for the start-up it saves), or if it cannot start, the run starts its workers as xdist does.

Its cost: one more process (the imports' memory, shared by the workers it forks), a socket folder,
and a worker that runs with the environment of the command's start for what a module reads as it is
imported. The one private surface it touches is execnet's bootstrap of a ``popen//python=`` gateway
(:func:`_execnet_bootstrap`): that the program is ``gateway_io.popen_bootstrapline`` and that the
line it reads is the source of ``execnet.gateway_base`` followed by the lines that start serving. It
compares, and on any difference runs what was sent as sent: an execnet that changes it costs the
~25 ms per worker the replay saves, never a wrong worker. execnet offers no public way to have such a
gateway import the module instead (it does so only for a plain ``popen``, which cannot name the
launcher).
"""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import importlib.util
import io
import json
import marshal
import os
import selectors
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Protocol

from amp_conformance.engine import exits


class _Closable(Protocol):
    def close(self) -> None: ...


#: Set to ``0`` to start workers as xdist does (no fork server).
SWITCH = "AMP_CONFORMANCE_FORK_SERVER"

#: What every worker imports before its first check, whatever the protocol (``preload_modules``:
#: what pytest and httpx import only once they run, too); the protocol's check modules come after.
WORKER_MODULES = (
    "pytest",
    "_pytest.unittest",
    "_pytest.junitxml",
    "pdb",
    "xdist.plugin",
    "xdist.remote",
    "httpcore",
    "h11",
    "amp_conformance.plugin",
    "amp_conformance.engine.client:default_tls_context",
)

_LAUNCHER = Path(__file__).with_name("worker_launcher.py")
#: How much lower a forked worker's scheduling priority is than the controller's.
WORKER_NICENESS = 5
#: The size of each answer to a launcher (its worker's pid, then its exit status: signed, big-endian).
ANSWER_BYTES = 8


def available() -> bool:
    """Whether this platform and environment allow a fork server."""
    return (
        sys.platform == "linux"
        and hasattr(os, "fork")
        and hasattr(socket, "send_fds")
        and os.environ.get(SWITCH, "1") != "0"
    )


class ForkServer:
    """The controller's handle on its fork server: the launcher command to give xdist, and close."""

    def __init__(self, folder: str, process: subprocess.Popen[bytes], socket_path: str) -> None:
        self._folder = folder
        self._process = process
        self.socket_path = socket_path

    @classmethod
    def start(cls, preload: Sequence[str]) -> ForkServer | None:
        """Start a fork server that imports ``preload`` (:func:`preload_modules`) before it forks;
        None when it cannot (the run then starts its workers as xdist does)."""
        if not available():
            return None
        folder = tempfile.mkdtemp(prefix="amp-forkserver-")
        socket_path = os.path.join(folder, "socket")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # bound and listening before the server has imported anything: launchers that connect
            # early wait in the backlog
            listener.bind(socket_path)
            listener.listen(64)
            setup = json.dumps(
                {"listener": listener.fileno(), "path": sys.path, "preload": list(preload), "folder": folder}
            )
            process = subprocess.Popen(
                [sys.executable, "-c", _SERVE, setup],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                pass_fds=[listener.fileno()],
            )
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            return None
        finally:
            listener.close()
        return cls(folder, process, socket_path)

    def preload(self, modules: Sequence[str]) -> None:
        """Have the server import ``modules`` too before it forks its next worker."""
        with contextlib.suppress(OSError, ValueError):
            if self._process.stdin is not None:
                self._process.stdin.write(json.dumps({"preload": list(modules)}).encode() + b"\n")
                self._process.stdin.flush()

    def python(self) -> str:
        """The ``python`` of an xdist ``popen`` spec that starts a worker through this server."""
        return shlex.join([sys.executable, "-I", "-S", str(_LAUNCHER), self.socket_path, sys.executable])

    def close(self) -> None:
        """End the server (its workers are not its to end) and remove its folder."""
        with contextlib.suppress(OSError):
            if self._process.stdin is not None:
                self._process.stdin.close()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        shutil.rmtree(self._folder, ignore_errors=True)


_early: ForkServer | None = None


def start_early(preload: Sequence[str]) -> None:
    """Start the fork server at once, before the command imports anything heavy: its imports then run
    beside the command's own (:func:`take_early` hands it to the run's controller)."""
    global _early
    if _early is None:
        _early = ForkServer.start(preload)
        exits.at_exit(discard_early)  # a run that did not take it (serial after all, or none)


def take_early() -> ForkServer | None:
    """The server :func:`start_early` started, if any (once: it is the caller's to close)."""
    global _early
    server, _early = _early, None
    return server


def discard_early() -> None:
    """Close the server :func:`start_early` started if no run took it."""
    server = take_early()
    if server is not None:
        server.close()


#: The server process's program (``python -c``): the controller's module path first, then serve; it
#: ends without the interpreter's teardown of everything it imported (the controller waits for it).
_SERVE = (
    "import json, os, sys; setup = json.loads(sys.argv[1]); sys.path[:] = setup['path']; "
    "from amp_conformance.engine.forkserver import serve; "
    "serve(setup['listener'], setup['preload'], setup['folder']); os._exit(0)"
)


def package_modules(package: str) -> list[str]:
    """The dotted names of a package's own modules (not its subpackages'), the package first."""
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    names = sorted({path.stem for folder in folders for path in Path(folder).glob("*.py")} - {"__init__"})
    return [package, *(f"{package}.{name}" for name in names)]


def preload_modules(modules: Iterable[str]) -> None:
    """Import each module (one that fails is left for the worker to import, and fail, itself), or for
    ``module:function``, import it and call the function (what it caches, every worker has); read the
    installed distributions' entry points as pytest will; and keep what is loaded out of the garbage
    collector's sight (the forked workers then share its memory instead of copying it)."""
    for entry in modules:
        name, _, function = entry.partition(":")
        with contextlib.suppress(BaseException):
            module = importlib.import_module(name)
            if function:
                getattr(module, function)()
    with contextlib.suppress(Exception):
        importlib.metadata.entry_points(group="pytest11")
    gc.freeze()


def serve(listener_fd: int, preload: Sequence[str], folder: str) -> None:
    """The fork server's process: fork a worker per launcher until the controller closes stdin (or
    is gone), then remove the folder."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the controller's and the workers'
    try:
        _serve(listener_fd, preload)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _serve(listener_fd: int, preload: Sequence[str]) -> None:
    preload_modules(preload)
    _know_execnet_source()
    listener = socket.socket(fileno=listener_fd)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_write)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(0, selectors.EVENT_READ, "controller")
    selector.register(wake_read, selectors.EVENT_READ, "children")
    workers: dict[int, socket.socket] = {}
    """Worker pid -> its launcher's connection."""
    pending = b""
    """What the controller sent that is not a whole line yet."""
    while True:
        # the controller's word first: what it asks to preload comes before the launchers it starts
        for key, _ in sorted(selector.select(), key=lambda ready: ready[0].data != "controller"):
            if key.data == "controller":
                data = os.read(0, 65536)
                if not data:
                    return  # the controller is done (or gone)
                *lines, pending = (pending + data).split(b"\n")
                for line in lines:
                    with contextlib.suppress(ValueError, TypeError, AttributeError):
                        preload_modules(json.loads(line).get("preload") or ())
            elif key.data == "children":
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 4096)
                _reap(workers, selector)
            elif key.data == "accept":
                with contextlib.suppress(OSError):
                    connection, _ = listener.accept()
                    inherited: list[_Closable | int] = [
                        selector,
                        listener,
                        wake_read,
                        wake_write,
                        *workers.values(),
                    ]
                    pid = _fork_worker(connection, inherited)
                    if pid is None:
                        connection.close()
                        continue
                    workers[pid] = connection
                    selector.register(connection, selectors.EVENT_READ, pid)
                    try:
                        connection.sendall(_answer(pid))
                    except OSError:  # the launcher is gone already (killed): so is its worker
                        os.kill(pid, signal.SIGKILL)
            else:  # a launcher's connection: it only ever closes (xdist killed the launcher)
                pid = key.data
                try:
                    closed = not key.fileobj.recv(1)  # type: ignore[union-attr]
                except OSError:  # reset: the launcher died before it read its answer
                    closed = True
                if pid in workers and closed:
                    selector.unregister(key.fileobj)
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)


def _reap(workers: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = workers.pop(pid, None)
        if connection is None:
            continue
        with contextlib.suppress(KeyError, ValueError):  # unregistered already if its launcher went
            selector.unregister(connection)
        with contextlib.suppress(OSError):
            connection.sendall(_answer(os.waitstatus_to_exitcode(status)))
        connection.close()


def _fork_worker(connection: socket.socket, inherited: Sequence[_Closable | int]) -> int | None:
    """Read a launcher's request (``worker_launcher``: a length with the three streams, then a
    ``marshal`` of its arguments, environment and folder) and fork its worker; the worker's pid."""
    connection.settimeout(5)
    head, fds, _, _ = socket.recv_fds(connection, 4, 3)
    request = _read_request(connection, head) if len(fds) == 3 else None
    if request is None:
        for fd in fds:
            os.close(fd)
        return None
    pid = os.fork()
    if pid == 0:  # the worker
        code = 1
        try:
            connection.close()
            for item in inherited:
                if isinstance(item, int):
                    os.close(item)
                else:
                    item.close()
            code = _run_worker(fds, *request)
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    connection.settimeout(None)
    return pid


def _answer(value: int) -> bytes:
    return value.to_bytes(ANSWER_BYTES, "big", signed=True)


def _read_request(connection: socket.socket, head: bytes) -> tuple[list[str], dict[str, str], str] | None:
    if len(head) != 4:
        return None
    size = int.from_bytes(head, "big")
    payload = b""
    while len(payload) < size:
        chunk = connection.recv(size - len(payload))
        if not chunk:
            return None
        payload += chunk
    try:
        arguments, environment, folder = marshal.loads(payload)
        return [str(a) for a in arguments], {str(k): str(v) for k, v in environment}, str(folder)
    except (ValueError, TypeError, EOFError):
        return None


#: The program execnet gives a ``popen`` interpreter (``gateway_io.popen_bootstrapline``): it reads one
#: line, execnet's ``gateway_base`` source and a few lines to start serving, and runs it.
_EXECNET_BOOTSTRAP_LINE = "import sys;exec(eval(sys.stdin.readline()))"
_execnet_source: str | None = None
"""The source of the ``execnet.gateway_base`` this server imported, once known."""


def _know_execnet_source() -> None:
    global _execnet_source
    with contextlib.suppress(Exception):
        import inspect

        import execnet.gateway_base

        _execnet_source = inspect.getsource(execnet.gateway_base)


def _execnet_bootstrap(namespace: dict[str, object]) -> None:
    """Run execnet's bootstrap as its program does, without compiling ``gateway_base`` anew.

    Given a ``python`` in its spec, execnet sends the module's source for the worker to compile and run
    (~25 ms, and the controller waits for it before it starts the next worker); for a plain ``popen``
    it has the worker import the module instead. When the source received is the very source of the
    module this server imported, the lines after it run with that module's names, as execnet's own
    import bootstrap does; anything else runs as sent."""
    source = eval(sys.stdin.readline())  # what the program does with the line
    known = _execnet_source
    if not isinstance(source, str) or not known or not source.startswith(known + "\n"):
        exec(source, namespace)
        return
    import execnet.gateway_base as base

    namespace.update({name: value for name, value in vars(base).items() if not name.startswith("__")})
    exec(compile(source[len(known) + 1 :], "<execnet bootstrap>", "exec"), namespace)


def _run_worker(fds: Sequence[int], argv: list[str], env: dict[str, str], cwd: str) -> int:
    """Become the process ``python ARGV`` would have been, and run execnet's bootstrap."""
    # below the processes that start the next workers (the controller, the launchers, this server):
    # while xdist starts them one after the other, the ones started import and collect meanwhile
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    with contextlib.suppress(OSError):
        os.chdir(cwd)
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), write_through=True, errors="backslashreplace"
    )
    flags, program = (
        (argv[: argv.index("-c")], argv[argv.index("-c") + 1]) if "-c" in argv[:-1] else (argv, "")
    )
    if "-B" in flags:
        sys.dont_write_bytecode = True
    main = ModuleType("__main__")
    sys.modules["__main__"] = main
    sys.argv = ["-c"]
    code = 0
    try:
        if program == _EXECNET_BOOTSTRAP_LINE:
            _execnet_bootstrap(main.__dict__)
        else:
            exec(compile(program, "<string>", "exec"), main.__dict__)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        exits.run_exit_handlers()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    return code
