"""The toy protocol's record: what the engine needs to run its checks (found through the registry)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import httpx

from amp_conformance.engine.client import Client, Connection, Reply
from amp_conformance.engine.context import CheckContext
from amp_conformance.engine.protocol import Protocol, ProtocolSession
from amp_conformance.engine.run import Run
from amp_conformance.engine.spec import CheckSpec


class ToyContext(CheckContext):
    """The toy checks' API: the engine's verdicts plus ``get``/``put`` and one step."""

    session: ToySession

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


class ToySession(ProtocolSession):
    def __init__(self, run: Run, http: httpx.Client | None):
        self.run = run
        self.connection = Connection(str(run.options.base_url), timeout=run.options.timeout, http=http)

    @property
    def target_label(self) -> str:
        return self.connection.api_base

    @property
    def requests(self) -> int:
        return self.connection.requests

    @property
    def broken_reason(self) -> str | None:
        return self.connection.broken_reason

    def preflight(self) -> str | None:
        try:
            reply: Reply = Client(self.connection).get("/health")
        except Exception as exc:
            return f"cannot reach {self.run.options.base_url}: {exc}"
        return None if reply.status == 200 else f"GET /health answered {reply.status}"

    def report_blocks(self) -> dict[str, Any]:
        server = {"base_url": self.connection.api_base, "unavailable": self.connection.broken_reason}
        return {
            "server": server,
            "cleanup": {"attempted": 0, "deleted": 0, "problems": []},
            "conventions": None,
        }

    def close(self) -> None:
        self.connection.close()


class ToyProtocol(Protocol):
    name: ClassVar[str] = "toy"
    title: ClassVar[str] = "Toy KV"
    checks_package: ClassVar[str] = "toy_protocol.checks"
    catalogue_package: ClassVar[str] = "toy_protocol"
    label: ClassVar[str] = "Toy KV 0.1"

    def context(self, session: ToySession, spec: CheckSpec) -> ToyContext:
        return ToyContext(session.run, spec, session)

    def open_session(
        self, run: Run, *, http: httpx.Client | None, plugins: Sequence[object] = ()
    ) -> ToySession:
        return ToySession(run, http)

    @contextlib.contextmanager
    def self_test(self, values: dict[str, Any]) -> Iterator[str]:
        from toy_protocol.server import start

        server, url = start()
        values["amp_base_url"] = url
        try:
            yield f"checking the bundled toy server at {url}"
        finally:
            server.shutdown()


PROTOCOL = ToyProtocol()
