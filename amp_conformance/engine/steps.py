"""Shared steps declared once: :class:`Step` (its name, the roles it plays, how it is made), and where
each labelled reply of a step stands (:class:`Recorder` while it is made, :class:`Made` for a check
reading it).

A check names the steps it reads in ``@check(uses=(STEP, ...))``: the registry then knows who shares
what (``--list``, the parallel scheduler's work units, ``parallel.scope_finder``), the step's roles are
taken first in every check using it (``Step.roles``: a step another check made is adopted with the same
agents, whatever the check did before), and a check calling a step it did not declare is a bug in the
check (:class:`~amp_conformance.engine.outcomes.ToolError`). Each step name is declared once (a second
declaration raises), so two modules cannot send different requests under one name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import CheckFailure, PreconditionFailed, ToolError

V = TypeVar("V")
R = TypeVar("R")
C = TypeVar("C", bound="Sharing")


class Sharing(Protocol):
    """What a step needs of a check context (``CheckContext``)."""

    @property
    def evidence(self) -> Any: ...

    @property
    def check_spec(self) -> Any: ...

    def shared(self, name: str, make: Callable[[Any], Any]) -> Any: ...

    def shared_made(self, name: str) -> bool: ...


#: Every declared step by name (a name is declared once).
_DECLARED: dict[str, Step[Any, Any, Any]] = {}


def declared(name: str) -> Step[Any, Any, Any] | None:
    """The step declared under ``name``, or None."""
    return _DECLARED.get(name)


def roles_of(names: tuple[str, ...]) -> tuple[str, ...]:
    """The roles the declared steps ``names`` play, in declaration order, each once: a check using
    them takes these first (unknown names play none)."""
    found: dict[str, None] = {}
    for name in names:
        step = _DECLARED.get(name)
        for role in step.roles if step is not None else ():
            found.setdefault(role)
    return tuple(found)


def _position(log: list[Exchange], base: int, evidence: object) -> int | None:
    exchange = exchange_of(evidence)
    if exchange is None:
        return None
    return next((i for i, seen in enumerate(log[base:]) if seen is exchange), None)


@dataclass(frozen=True)
class Frozen:
    """A finding met while a step was made, as plain data (raised again, with the same exchange, by
    the check it is about: :meth:`Made.failure`)."""

    message: str
    expected: str | None
    requirements: tuple[str, ...]
    step: str | None
    at: int | None

    def failure(self, exchange: Exchange | None) -> CheckFailure:
        """The finding again, with ``exchange`` (the same request, in the reading check's evidence)."""
        if self.step is not None:
            return PreconditionFailed(
                self.message,
                step=self.step,
                requirement=self.requirements[0],
                expected=self.expected,
                exchange=exchange,
            )
        return CheckFailure(
            self.message, expected=self.expected, exchange=exchange, requirements=self.requirements
        )


class Recorder:
    """Notes, while a step is made, where each labelled reply stands among the step's exchanges:
    ``rec("label", reply)`` (returns the reply); a check reads it back as ``made["label"]``."""

    def __init__(self, log: list[Exchange]):
        self._log = log
        self._base = len(log)
        self.at: dict[str, int] = {}

    def __call__(self, label: str, reply: R) -> R:
        at = _position(self._log, self._base, reply)
        if at is None:
            raise ToolError(f"shared step: {label!r} is no reply of this step")
        self.at[label] = at
        return reply

    def position(self, reply: object) -> int | None:
        """Where ``reply`` (or an exchange) stands among the step's exchanges, None when it is none of
        them; a check reads it back with :meth:`Made.reply_at` (for replies a step keeps by the
        dozen, such as pages, where a label each would say no more)."""
        return _position(self._log, self._base, reply)

    def failure(self, failure: CheckFailure) -> Frozen:
        """``failure`` as plain data, to keep in the step's value for the check it is about."""
        return Frozen(
            failure.message,
            failure.expected,
            tuple(failure.requirements),
            failure.step if isinstance(failure, PreconditionFailed) else None,
            _position(self._log, self._base, failure.exchange),
        )


@dataclass
class _Kept(Generic[V]):
    """What the engine's ``shared`` keeps for a declared step: its value and the labels' positions."""

    value: V
    at: dict[str, int]


@dataclass
class Made(Generic[V, R]):
    """A step as one check reads it: its value, and its replies (bound to the check's own evidence),
    all in order (``replies``) or by label (``made["label"]``)."""

    value: V
    replies: list[R]
    at: Mapping[str, int] = field(default_factory=dict)

    def __getitem__(self, label: str) -> R:
        return self.replies[self.at[label]]

    def __contains__(self, label: object) -> bool:
        return label in self.at

    def labels(self) -> Iterator[str]:
        return iter(self.at)

    def reply_at(self, at: int) -> R:
        """The reply :meth:`Recorder.position` placed at ``at``."""
        return self.replies[at]

    def failure(self, frozen: Frozen) -> CheckFailure:
        """The finding :meth:`Recorder.failure` kept, with its exchange from this check's evidence."""
        return frozen.failure(exchange_of(self.replies[frozen.at]) if frozen.at is not None else None)


def exchange_of(reply: object) -> Exchange | None:
    """The exchange of a reply (or the exchange itself)."""
    return reply if isinstance(reply, Exchange) else getattr(reply, "exchange", None)


class Step(Generic[C, V, R]):
    """A shared step, declared once at module level: ``name`` (unique), the ``roles`` its maker plays
    (taken first, in this order, by every check that declares it in ``uses=``), ``make(context, rec)``
    and ``reply``, what a check's replies are rebuilt as from their exchanges."""

    def __init__(
        self,
        name: str,
        make: Callable[[C, Recorder], V],
        *,
        roles: tuple[str, ...] = (),
        reply: Callable[[Exchange], R],
    ):
        if name in _DECLARED:
            raise ValueError(f"the shared step {name!r} is declared twice")
        self.name = name
        self.roles = roles
        self._make = make
        self._reply = reply
        _DECLARED[name] = self

    def __repr__(self) -> str:
        return f"Step({self.name!r})"

    def _declared_by(self, context: Sharing) -> None:
        spec = context.check_spec
        if self.name not in (*(getattr(spec, "uses", ()) or ()), *(getattr(spec, "adopts", ()) or ())):
            raise ToolError(
                f"the check reads the shared step {self.name!r}: name it in @check(uses=...) (or adopts=)"
            )

    def __call__(self, context: C) -> Made[V, R]:
        """The step (made by the first check that asks, in this run), as ``context``'s check reads it."""
        self._declared_by(context)
        log: list[Exchange] = context.evidence.exchanges
        start = len(log)

        def make(maker: C) -> _Kept[V]:
            rec = Recorder(maker.evidence.exchanges)
            value = self._make(maker, rec)
            return _Kept(value, dict(rec.at))

        kept: _Kept[V] = context.shared(self.name, make)
        return Made(kept.value, [self._reply(exchange) for exchange in log[start:]], kept.at)

    def made(self, context: Sharing) -> bool:
        """Whether the step was made already in this run (this worker) without a problem."""
        self._declared_by(context)
        return context.shared_made(self.name)
