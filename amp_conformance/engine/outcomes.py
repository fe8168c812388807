"""How a check ends: the exceptions checks raise and the outcome vocabulary of the report.

A check's verdict is about the server; an *error* is about the tool or the network and is never
counted as a verdict. Keeping the two apart is what lets a CI gate trust a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from amp_conformance.engine.exchange import Exchange

from amp_conformance.engine.vocabulary import OUTCOMES as OUTCOMES
from amp_conformance.engine.vocabulary import Outcome

PASS, FAIL, WARN, SKIP = Outcome.PASS, Outcome.FAIL, Outcome.WARN, Outcome.SKIP
ERROR, BLOCKED = Outcome.ERROR, Outcome.BLOCKED
"""``blocked``: the check could not reach its own question because a step it depends on broke; the
step's requirement is the root cause, reported once by the check that asks about it (as WPT and TAP
tell a failing assertion from a failed harness step)."""


class CheckFailure(AssertionError):
    """The server did not do what a requirement says. Carries the evidence that shows it.

    ``requirements`` names the ids the finding breaks when they are not simply the check's own (a check
    citing several ids says which one a finding is about); the finding's level is theirs."""

    def __init__(
        self,
        message: str,
        *,
        expected: str | None = None,
        exchange: Exchange | None = None,
        requirements: tuple[str, ...] = (),
    ):
        super().__init__(message)
        self.message = message
        self.expected = expected
        self.exchange = exchange
        self.requirements = requirements

    def __reduce__(self) -> tuple[object, ...]:
        # copies (a shared step's value holds findings) keep every member, not only the message
        return (_rebuild, (type(self), self.message), dict(self.__dict__))


class PreconditionFailed(CheckFailure):
    """A step the check depends on (create, archive, delete, read back...) broke ``requirement``.

    Raised where the step's helper lives. For a check that cites ``requirement`` this is an ordinary
    failure; for any other check it is ``blocked`` under that root cause."""

    def __init__(
        self,
        message: str,
        *,
        step: str,
        requirement: str,
        expected: str | None = None,
        exchange: Exchange | None = None,
    ):
        super().__init__(message, expected=expected, exchange=exchange, requirements=(requirement,))
        self.step = step
        self.requirement = requirement


class NotApplicable(Exception):
    """The check cannot be asked of this server with what the run was given (too few keys, a channel
    that is not targeted): a *skip* with this message, never a verdict."""


def _rebuild(kind: type[CheckFailure], message: str) -> CheckFailure:
    failure = kind.__new__(kind)
    AssertionError.__init__(failure, message)
    return failure


class ToolError(Exception):
    """The tool or the network failed: no verdict on the server can be drawn from this check."""


class TransportFailure(ToolError):
    """A request could not complete (refused, reset, timed out)."""

    exchange: Exchange | None = None
    unreachable: bool = False


class AmbiguousExchange(TransportFailure):
    """A request that is not safe to repeat (POST, PATCH, a lifecycle pass) got no complete response:
    whether the server applied it is unknown. Never sent again blind: the caller reconciles (reads the
    state back) or the check is re-run once from the start on fresh cells."""


class DeadlineExceeded(ToolError):
    """The check used up its time budget."""


class ServerUnavailable(ToolError):
    """Earlier requests kept failing, so this one was not sent."""


@dataclass
class Warn:
    """A SHOULD/MAY not met, or a documented convention worth pointing out."""

    message: str
    requirements: tuple[str, ...] = ()
    exchange: Exchange | None = None
    unreachable: bool = False


@dataclass
class Evidence:
    """Everything a check saw and said, kept for the report."""

    exchanges: list[Exchange] = field(default_factory=list)
    warnings: list[Warn] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
