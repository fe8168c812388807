"""AMP v0.1.0 as the engine knows it: the protocol record the registry finds (``amp-0.1``).

Its options (admin token, API keys, store-wide effects), the session behind the ``amp`` fixture, the
bundled server the command self-tests, the serial groups of a parallel run, and the requirement a
server error breaks (AMP-ERR-07).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import httpx

from amp_conformance.amp01.context import Amp01Context
from amp_conformance.amp01.session import Amp01Options, Amp01Session
from amp_conformance.amp01.target import normalise_base_url
from amp_conformance.engine.http import HttpProtocol
from amp_conformance.engine.options import OptionSpec, OptionValues, SuiteOptions, UsageError

if TYPE_CHECKING:
    from amp_conformance.engine.run import Run
    from amp_conformance.engine.spec import CheckSpec

#: Areas whose checks run store-wide lifecycle passes or depend on where a pass leaves cells (the admin
#: route, lifecycle, retention): in a parallel run they run in the serial group of passes.
PASS_AREAS = frozenset({"lc", "admin", "ret"})
#: Areas whose checks work to the scoring-PATCH rate window: the serial group of rate windows. A budget
#: belongs to one cell (AMP-RATE-07), so the two groups may run beside each other.
RATE_AREAS = frozenset({"rate"})
PASSES, RATE_WINDOWS = "passes", "rate-windows"


def serial_group_of(*, area: str, global_effects: bool = False, serial: bool = False) -> str | None:
    """``passes`` for checks with store-wide effects (``global_effects``), checks a concurrent pass
    could change (``serial``) and the lifecycle areas; ``rate-windows`` for rate checks; else None."""
    if global_effects or serial or area in PASS_AREAS:
        return PASSES
    if area in RATE_AREAS:
        return RATE_WINDOWS
    return None


def parse_keys(pairs: list[str], keys_file: str | None) -> dict[str, str]:
    """``--api-key AGENT=KEY`` (repeatable) and ``--api-keys-file`` as agent id -> key."""
    keys: dict[str, str] = {}
    if keys_file:
        try:
            loaded = json.loads(Path(keys_file).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read --api-keys-file {keys_file}: {exc}") from None
        if not isinstance(loaded, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
        ):
            raise UsageError(f"--api-keys-file {keys_file} must be a JSON object of agent id -> key")
        keys.update(loaded)
    for pair in pairs:
        agent, sep, key = pair.partition("=")
        if not sep or not agent or not key:
            raise UsageError(f"--api-key takes AGENT=KEY, got {pair!r}")
        keys[agent] = key
    return keys


#: Environment variables through which httpx would reach the server via a proxy (either case).
_PROXY_VARIABLES = tuple(
    name for base in ("http_proxy", "https_proxy", "all_proxy") for name in (base, base.upper())
)


class Amp01Protocol(HttpProtocol[Amp01Options, Amp01Session, Amp01Context]):
    """AMP v0.1.0 (REST: memory cells, search, access policies, decay, ``GET /spec``)."""

    name: ClassVar[str] = "amp-0.1"
    title: ClassVar[str] = "AMP v0.1.0"
    checks_package: ClassVar[str] = "amp_conformance.amp01.checks"
    catalogue_package: ClassVar[str] = "amp_conformance.amp01"
    server_error_requirement: ClassVar[str | None] = "AMP-ERR-07"
    base_url_option: ClassVar[OptionSpec] = OptionSpec(
        "base-url", "URL of the AMP server, with or without /amp/v1 (enables the suite)"
    )
    label: ClassVar[str] = "AMP 0.1.0"
    claims: ClassVar[tuple[str, str] | None] = ("/spec", "spec")
    options: ClassVar[tuple[OptionSpec, ...]] = (
        OptionSpec("admin-token", "admin token for POST /lifecycle/run (never printed)"),
        OptionSpec(
            "api-key",
            "AGENT=KEY: an API key the suite may use for that agent (repeatable)",
            {"action": "append", "default": []},
        ),
        OptionSpec("api-keys-file", 'JSON file {"agent-id": "plain key", ...} of keys the suite may use'),
        OptionSpec(
            "allow-global-effects",
            "allow store-wide operations such as POST /lifecycle/run (needs --admin-token)",
            {"action": "store_true", "default": False},
        ),
        OptionSpec(
            "keep-cells",
            "leave the cells the run created in place (no cleanup), so a report's curl lines can be replayed",
            {"action": "store_true", "default": False},
        ),
    )

    def parse_options(self, values: OptionValues) -> Amp01Options:
        admin_token = values.text("admin-token")
        if values.flag("allow-global-effects") and admin_token is None:
            raise UsageError("--allow-global-effects needs --admin-token")
        return Amp01Options(
            admin_token=admin_token,
            api_keys=parse_keys(values.texts("api-key"), values.text("api-keys-file")),
            allow_global_effects=values.flag("allow-global-effects"),
            keep_cells=values.flag("keep-cells"),
        )

    def validate(self, options: SuiteOptions) -> None:
        super().validate(options)
        try:
            normalise_base_url(str(options.base_url))
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    def open_session(
        self, run: Run, *, http: httpx.Client | None, plugins: Sequence[object] = ()
    ) -> Amp01Session:
        return Amp01Session(run, self.own_options(run.options), http=http)

    def context(self, session: Amp01Session, spec: CheckSpec) -> Amp01Context:
        return Amp01Context(session.run, spec, session)

    def serial_group(self, spec: CheckSpec) -> str | None:
        return serial_group_of(area=spec.area, global_effects=spec.global_effects, serial=spec.serial)

    def health_url(self, base_url: str) -> str:
        return f"{normalise_base_url(base_url)[0]}/health"

    def reachable(self, options: SuiteOptions) -> str | None:
        """Whether anything answers at the base URL at all (connection refused: one line, exit 2).

        A connection is all it takes to know (the preflight then asks what answers): without a proxy
        to go through, a TCP connection is opened and closed, which costs no answer's wait."""
        api_base, _ = normalise_base_url(str(options.base_url))
        url = httpx.URL(api_base)
        proxied = any(os.environ.get(name) for name in _PROXY_VARIABLES)
        if not proxied and url.host:
            port = url.port or (443 if url.scheme == "https" else 80)
            try:
                socket.create_connection((url.host, port), timeout=options.timeout).close()
            except OSError as exc:
                return f"cannot reach {options.base_url}: connection failed ({exc or type(exc).__name__})"
            return None
        try:
            httpx.get(f"{api_base}/health", timeout=options.timeout)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            return f"cannot reach {options.base_url}: connection failed ({exc or type(exc).__name__})"
        except httpx.HTTPError:
            return None  # reachable but misbehaving: the checks will say how
        return None

    @contextlib.contextmanager
    def self_test(self, values: OptionValues) -> Iterator[str]:
        """The bundled reference server on a free loopback port, in keys mode with a fresh admin token."""
        from amp_conformance.amp01.selfserve import BundledServer

        with BundledServer(keys=True) as server:
            values.update_values(
                base_url=server.url,
                admin_token=server.admin_token,
                allow_global_effects=True,
                api_key=[f"{agent}={key}" for agent, key in server.api_keys.items()],
            )
            yield (
                f"no --base-url given, checking the bundled reference server at {server.url} "
                f"(API keys required, {len(server.api_keys)} agents)"
            )


PROTOCOL = Amp01Protocol()
