"""Run the AMP v1.1 checks in-process against a target and collect each check's outcome."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.amp11.session import Amp11Session, Amp11Target
from amp_conformance.engine.inprocess import ASGITransport, in_process_client
from amp_conformance.engine.marking import spec_of
from amp_conformance.plugin import active_run

CHECKS_DIR = Path(__file__).resolve().parents[2] / "amp_conformance" / "amp11" / "checks"
MCP_SERVER = [sys.executable, "-m", "reference_server.amp11", "--mcp"]


@dataclass
class Outcome:
    name: str
    requirements: tuple[str, ...]
    outcome: str  # passed / failed / skipped / error / warned
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    blocked_by: dict[str, Any] | None = None


class Collector:
    """A pytest plugin recording every check's result (optionally only checks citing ``requirements``)."""

    def __init__(self, requirements: frozenset[str] = frozenset()) -> None:
        self.results: dict[str, Outcome] = {}
        self.session: Amp11Session | None = None
        self.run: Any = None
        self.requirements = requirements

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not self.requirements:
            return
        keep = [i for i in items if (spec := spec_of(i)) and set(spec.requirements) & self.requirements]
        dropped = [i for i in items if i not in keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The engine's results, by check name (the outcome words pytest would use, plus ``warned``
        and ``blocked``)."""
        run = active_run(session.config)
        if run is None:
            return
        self.run = run
        self.session = run.session if isinstance(run.session, Amp11Session) else None
        session_state = run.session
        self.session = session_state if isinstance(session_state, Amp11Session) else None
        words = {"pass": "passed", "fail": "failed", "skip": "skipped", "warn": "warned"}
        for result in run.results.values():
            entry = Outcome(result.name, result.requirements, words.get(result.outcome, result.outcome))
            entry.message = result.message
            entry.warnings = [w.message for w in result.warnings]
            entry.notes = list(result.notes)
            entry.blocked_by = result.blocked_by
            self.results[result.name] = entry


def run_checks(
    target: Amp11Target, *selection: str, requirements: frozenset[str] = frozenset(), fuzz: bool | None = None
) -> Collector:
    """The checks (``selection``: ``-k`` expressions; ``requirements``: only checks citing them) with
    the engine's outcomes. The fuzz area runs when asked (``fuzz``), by default only in a narrowed run:
    a whole run judges the deterministic checks (a fake server's behaviour under fuzzing is the fuzz
    tests' business)."""
    collector = Collector(requirements)
    args = [
        str(CHECKS_DIR),
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "amp_conformance.plugin",
        "--amp-protocol=amp-1.1",
        f"--amp-timeout={target.timeout}",
        f"--amp-deadline={target.deadline}",
        "--assert=plain",
        "--rootdir",
        str(CHECKS_DIR),
    ]
    for name in selection:
        args += ["-k", name]
    if not (fuzz if fuzz is not None else bool(selection or requirements)):
        args.append("--amp-no-fuzz")
    previous = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        pytest.main(args, plugins=[target, collector])
    finally:
        if previous is None:
            del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = previous
    return collector


def mcp_target(faults: str = "", *, timeout: float = 5.0, **env: str) -> Amp11Target:
    environment = {**os.environ, "AMP11_REFERENCE_FAULTS": faults, **env}
    return Amp11Target(mcp_command=list(MCP_SERVER), timeout=timeout, deadline=60.0, env=environment)


#: The engine's in-process transport serves streamed responses (the export route's NDJSON) whole.
StreamingASGITransport = ASGITransport


@contextmanager
def rest_target(faults: str = "", *, timeout: float = 5.0) -> Iterator[Amp11Target]:
    """The reference server's REST app with ``faults``, called in-process."""
    from reference_server.amp11 import Faults, Store, create_rest_app

    app = create_rest_app(Store(), Faults.parse(faults))
    http = in_process_client(StreamingASGITransport(app))
    try:
        yield Amp11Target(base_url="http://amp11.test", http=http, timeout=timeout)
    finally:
        http.close()


@contextmanager
def rest_server(faults: str = "", *, timeout: float = 5.0) -> Iterator[Amp11Target]:
    """The reference server's REST app with ``faults``, served by uvicorn on 127.0.0.1 in a thread."""
    import uvicorn

    from reference_server.amp11 import Faults, Store, create_rest_app

    app = create_rest_app(Store(), Faults.parse(faults))
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not server.started:
            raise RuntimeError("the REST reference server did not start")
        yield Amp11Target(base_url=f"http://127.0.0.1:{port}", timeout=timeout)
    finally:
        server.should_exit = True
        thread.join(10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def both_channels(faults: str = "", *, timeout: float = 5.0) -> Iterator[Amp11Target]:
    """One reference server process serving MCP (stdio) and REST (127.0.0.1) over one store.

    The suite starts its own MCP process, so the REST channel belongs to that same process: the
    command given to the suite carries ``--rest-port`` and the REST URL points at it."""
    port = free_port()
    environment = {**os.environ, "AMP11_REFERENCE_FAULTS": faults}
    command = [*MCP_SERVER, "--rest-port", str(port)]
    target = Amp11Target(
        mcp_command=command, base_url=f"http://127.0.0.1:{port}", timeout=timeout, env=environment
    )
    yield target
