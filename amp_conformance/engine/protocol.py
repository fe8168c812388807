"""What a protocol is to the engine: a small record found through the registry (as wptrunner finds a
product), and the run-wide session it opens.

A protocol package (one of this distribution's, or a third party's) defines one :class:`Protocol` subclass
and exposes an instance under the ``amp_conformance.protocols`` entry-point group. The plugin and the
command then know it by name alone: its checks package, catalogue, options, how a target is started
and preflighted, the check context its checks receive, what the end of a run adds to the report,
which requirement a server error breaks, its serial groups, and whether workers may share its run.

The seam is typed: ``Protocol[OptionsT, SessionT, ContextT]`` ties what :meth:`Protocol.parse_options`
makes, the session :meth:`Protocol.open_session` opens and the context :meth:`Protocol.context` gives a
check, so ``mypy --strict`` rejects a protocol whose methods disagree with each other or the engine
(``tests/engine/test_typed_seam.py``). The base record assumes no transport: a protocol over HTTP
subclasses :class:`~amp_conformance.engine.http.HttpProtocol`. The classes are defined beside
:class:`~amp_conformance.engine.run.Run` (a session and its run refer to each other); import them from
here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from amp_conformance.engine.run import (
    UNIT_COSTS_FILE,
    AnyProtocol,
    ContextLike,
    ContextT,
    OptionsT,
    Protocol,
    ProtocolSession,
    SessionT,
)

__all__ = [
    "UNIT_COSTS_FILE",
    "AnyProtocol",
    "ContextLike",
    "ContextT",
    "OptionsT",
    "Protocol",
    "ProtocolSession",
    "SessionT",
    "protocol_option_error",
]


def protocol_option_error(
    protocol: AnyProtocol, values: Mapping[str, object], others: Sequence[AnyProtocol]
) -> str | None:
    """A protocol option given to a run of another protocol: which one, said once (``values``: the
    raw values, keyed by :attr:`OptionSpec.dest`)."""
    own = {spec.dest for spec in protocol.declared_options}
    for other in others:
        for spec in other.declared_options:
            if spec.dest in own:
                continue
            value = values.get(spec.dest)
            if value not in (None, False, [], spec.kwargs.get("default")):
                return f"--{spec.name} goes with --protocol {other.name}"
    return None
