"""The fork server a parallel run's workers are forked from (engine.forkserver, engine.worker_launcher).

A launcher stands in for its worker: the worker runs the ``-c`` program with the launcher's streams,
environment and folder, its exit status (or the signal that ended it) is the launcher's, SIGTERM to
the launcher reaches it, and killing the launcher kills it. Each worker has what the server
preloaded and its own random state. Without a server to reach, the launcher becomes the worker.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import execnet
import pytest

from amp_conformance.engine import forkserver
from amp_conformance.engine.forkserver import ForkServer, package_modules

pytestmark = pytest.mark.skipif(not forkserver.available(), reason="a fork server needs Linux")


@pytest.fixture
def server() -> Iterator[ForkServer]:
    started = ForkServer.start(["amp_conformance.engine.marking"])
    assert started is not None
    yield started
    started.close()


def _launch(server: ForkServer, program: str, **kwargs: object) -> subprocess.Popen[str]:
    command = [*shlex.split(server.python()), "-u", "-c", program]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)  # type: ignore[call-overload, no-any-return]


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_worker_runs_the_program_with_the_launchers_streams_environment_and_folder(
    server: ForkServer, tmp_path: Path
) -> None:
    program = (
        "import os, sys; print(os.environ['AMP_TEST_MARK'], os.getcwd(), "
        "'amp_conformance.engine.marking' in sys.modules); print('to stderr', file=sys.stderr); sys.exit(3)"
    )
    launcher = _launch(server, program, env={**os.environ, "AMP_TEST_MARK": "marked"}, cwd=str(tmp_path))
    out, err = launcher.communicate(timeout=30)
    assert launcher.returncode == 3
    assert out.split() == ["marked", str(tmp_path), "True"]
    assert "to stderr" in err


def test_the_signal_that_ends_a_worker_ends_its_launcher_and_sigterm_is_forwarded(server: ForkServer) -> None:
    launcher = _launch(server, "import os, time; print(os.getpid(), flush=True); time.sleep(60)")
    assert launcher.stdout is not None
    worker = int(launcher.stdout.readline())
    assert worker != launcher.pid
    launcher.send_signal(signal.SIGTERM)
    assert launcher.wait(timeout=30) == -signal.SIGTERM
    assert _gone(worker)


def test_killing_a_launcher_kills_its_worker(server: ForkServer) -> None:
    launcher = _launch(server, "import os, time; print(os.getpid(), flush=True); time.sleep(60)")
    assert launcher.stdout is not None
    worker = int(launcher.stdout.readline())
    launcher.kill()
    launcher.wait(timeout=30)
    assert _gone(worker), "the worker outlived its killed launcher"


def test_each_worker_has_its_own_random_state(server: ForkServer) -> None:
    program = "import random; print(random.getrandbits(64))"
    draws = {_launch(server, program).communicate(timeout=30)[0].strip() for _ in range(3)}
    assert len(draws) == 3


def test_without_a_server_the_launcher_becomes_the_worker(tmp_path: Path) -> None:
    launcher = Path(forkserver.__file__).with_name("worker_launcher.py")
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            str(launcher),
            str(tmp_path / "no-socket"),
            sys.executable,
            "-c",
            "print(42)",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "42")


def test_an_execnet_gateway_through_the_server_is_a_forked_worker(server: ForkServer) -> None:
    group = execnet.Group()
    try:
        gateway = group.makegateway(f"execmodel=main_thread_only//popen//python={server.python()}")
        channel = gateway.remote_exec(
            "import os, sys; channel.send((os.getppid(), 'amp_conformance.engine.marking' in sys.modules))"
        )
        parent, preloaded = channel.receive(timeout=30)
    finally:
        group.terminate(timeout=10)
    assert parent == server._process.pid
    assert preloaded


def test_closing_ends_the_server_and_removes_its_folder() -> None:
    started = ForkServer.start([])
    assert started is not None
    folder = os.path.dirname(started.socket_path)
    started.close()
    assert started._process.poll() is not None
    assert not os.path.exists(folder)


def test_the_switch_turns_the_server_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(forkserver.SWITCH, "0")
    assert ForkServer.start([]) is None


def test_package_modules_names_the_check_modules() -> None:
    names = package_modules("amp_conformance.amp01.checks")
    assert names[0] == "amp_conformance.amp01.checks"
    assert "amp_conformance.amp01.checks.test_access" in names
    assert "amp_conformance.amp01.checks._support" in names


@pytest.mark.parametrize(
    ("arguments", "asks"),
    [
        (["--workers", "8"], True),
        (["--base-url", "http://x", "--workers=3", "--no-fuzz"], True),
        (["--workers", "1"], False),
        (["--workers", "many"], False),
        ([], False),
        (["--workers", "8", "--list"], False),
        (["--workers", "8", "--app", "mod:app"], False),
        (["report", "--workers", "8"], False),
        (["--workers"], False),
    ],
)
def test_the_command_starts_a_server_early_only_when_it_plainly_asks_for_workers(
    arguments: list[str], asks: bool
) -> None:
    from amp_conformance._command import asks_for_workers

    assert asks_for_workers(arguments) is asks


def test_an_early_server_is_taken_once_and_discarded_when_no_run_takes_it() -> None:
    forkserver.start_early([])
    server = forkserver.take_early()
    assert server is not None and forkserver.take_early() is None
    server.close()
    forkserver.start_early([])
    left = forkserver._early
    assert left is not None
    forkserver.discard_early()
    assert forkserver.take_early() is None and left._process.poll() is not None


def test_a_server_preloads_what_it_is_told_after_it_started(server: ForkServer) -> None:
    server.preload(["amp_conformance.engine.shared_store"])
    launcher = _launch(server, "import sys; print('amp_conformance.engine.shared_store' in sys.modules)")
    assert launcher.communicate(timeout=30)[0].strip() == "True"


def test_a_launcher_gone_before_it_heard_its_workers_pid_leaves_no_worker(
    server: ForkServer, tmp_path: Path
) -> None:
    """A launcher killed between its request and the answer (xdist's kill, a SIGTERM under load): the
    server's send of the pid fails or it sees the connection close, and kills the worker."""
    import marshal
    import socket

    read_end, write_end = os.pipe()
    program = "import time; time.sleep(60)"
    payload = marshal.dumps([["-u", "-c", program], sorted(os.environ.items()), str(tmp_path)])
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(server.socket_path)
        socket.send_fds(connection, [len(payload).to_bytes(4, "big")], [read_end, write_end, write_end])
        connection.sendall(payload)
    os.close(read_end)
    os.close(write_end)
    pid = server._process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children")
    time.sleep(1.0)  # the server has forked by then (a worker it kills may be gone before it is seen)
    deadline = time.monotonic() + 15
    while children.read_text().split() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not children.read_text().split(), "a worker outlived the launcher that asked for it"
    launcher = _launch(server, "print('still serving')")
    assert launcher.communicate(timeout=30)[0].strip() == "still serving"


def test_the_early_start_knows_the_commands_subcommands_and_printing_options() -> None:
    """``_command`` reads the arguments before the command is imported: its names must be the command's."""
    from amp_conformance import _command, cli

    assert set(cli.SUBCOMMANDS) == _command._NOT_A_RUN
    options = cli._parser()._option_string_actions
    assert {"--workers", "--app", *_command._PRINTS_ONLY} <= set(options)


def test_a_forked_worker_runs_the_exit_handlers_registered_with_engine_exits(
    server: ForkServer, tmp_path: Path
) -> None:
    """The worker ends with os._exit (no teardown of the server's imports): what it registered with
    engine.exits.at_exit runs first, and logging is flushed, without atexit's private runner."""
    mark = tmp_path / "mark"
    program = (
        "from amp_conformance.engine import exits; "
        f"exits.at_exit(lambda: open({str(mark)!r}, 'w').write('ran')); "
        "import logging; logging.basicConfig(); logging.getLogger('t').warning('logged')"
    )
    _, err = _launch(server, program).communicate(timeout=30)
    assert mark.read_text() == "ran"
    assert "logged" in err


def test_an_exit_handler_runs_once_and_is_taken_off_atexit(monkeypatch: pytest.MonkeyPatch) -> None:
    import atexit

    from amp_conformance.engine import exits

    unregistered: list[object] = []
    monkeypatch.setattr(exits, "_handlers", [])
    monkeypatch.setattr(atexit, "register", lambda handler: handler)
    monkeypatch.setattr(atexit, "unregister", unregistered.append)
    calls: list[str] = []
    exits.at_exit(lambda: calls.append("first"))
    exits.at_exit(lambda: 1 / 0)  # a failing one stops nothing
    exits.at_exit(lambda: calls.append("last"))
    exits.run_exit_handlers()
    exits.run_exit_handlers()
    assert calls == ["last", "first"] and len(unregistered) == 3
