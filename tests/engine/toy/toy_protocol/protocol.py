"""The toy protocol's record: what the engine needs to run its checks (found through the registry).

Spoken over HTTP, it takes the engine's HTTP layer (``engine.http``): the connection, its request
count and breaker, the ``/health`` preflight, ``--base-url`` and the report's blocks."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import ClassVar

import httpx

from amp_conformance.engine.client import Client, Connection
from amp_conformance.engine.context import CheckContext
from amp_conformance.engine.http import HttpProtocol, HttpSession
from amp_conformance.engine.options import OptionValues
from amp_conformance.engine.run import Run
from amp_conformance.engine.spec import CheckSpec


class ToySession(HttpSession):
    def __init__(self, run: Run, http: httpx.Client | None):
        self.connection = Connection(str(run.options.base_url), timeout=run.options.timeout, http=http)
        super().__init__(run, self.connection)


class ToyContext(CheckContext[ToySession]):
    """The toy checks' API: the engine's verdicts plus ``get``/``put`` and one step."""

    def client(self) -> Client:
        return Client(self.session.connection, log=self.evidence.exchanges, deadline=self.deadline)

    def key(self) -> str:
        return f"{self.run.prefix}-{len(self.evidence.exchanges)}"

    def stored(self, key: str, value: str) -> None:
        """A step: store ``value`` and read it back (anything else blocks under TOY-PUT-01)."""
        self.client().request("PUT", f"/kv/{key}", content=value)
        reply = self.client().get(f"/kv/{key}")
        if reply.status != 200 or reply.text != value:
            self.precondition_failed(
                f"a stored value read back as {reply.status} {reply.text[:40]!r}",
                reply,
                step="storing a value",
                requirement="TOY-PUT-01",
            )


class ToyProtocol(HttpProtocol[None, ToySession, ToyContext]):
    name: ClassVar[str] = "toy"
    title: ClassVar[str] = "Toy KV"
    checks_package: ClassVar[str] = "toy_protocol.checks"
    catalogue_package: ClassVar[str] = "toy_protocol"
    label: ClassVar[str] = "Toy KV 0.1"

    def parse_options(self, values: OptionValues) -> None:
        return None

    def open_session(
        self, run: Run, *, http: httpx.Client | None, plugins: Sequence[object] = ()
    ) -> ToySession:
        return ToySession(run, http)

    def context(self, session: ToySession, spec: CheckSpec) -> ToyContext:
        return ToyContext(session.run, spec, session)

    @contextlib.contextmanager
    def self_test(self, values: OptionValues) -> Iterator[str]:
        from toy_protocol.server import start

        server, url = start()
        values["base-url"] = url
        try:
            yield f"checking the bundled toy server at {url}"
        finally:
            server.shutdown()


PROTOCOL = ToyProtocol()
