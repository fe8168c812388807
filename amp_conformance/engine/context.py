"""The check context: the verdict API every protocol's checks use, and shared steps.

A protocol's context (``Amp``, ``Amp11``) subclasses :class:`CheckContext` and adds only its
protocol's verbs. Findings: ``expect`` / ``fail`` name the requirement they break (``requirement=``)
and are reported at its level; ``warn`` and ``note`` record and carry on; ``skip`` ends the check with
a reason; a step the check depends on raises :class:`PreconditionFailed` (``precondition_failed``):
for a check citing the step's requirement a failure, for every other check *blocked* under it.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import pytest

from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import CheckFailure, Evidence, PreconditionFailed, ToolError, Warn

if TYPE_CHECKING:
    from amp_conformance.engine.run import Run
    from amp_conformance.engine.spec import CheckSpec

T = TypeVar("T")
#: ``run.cache`` key of the shared steps' entries.
SHARED_KEY = "shared-steps"


def exchange_of(evidence: object) -> Exchange | None:
    """The exchange behind what a check judged: an :class:`Exchange`, or anything carrying one in
    ``.exchange`` (a reply, a verb result)."""
    if isinstance(evidence, Exchange):
        return evidence
    found = getattr(evidence, "exchange", None)
    return found if isinstance(found, Exchange) else None


@dataclass
class SharedStep:
    """What :meth:`CheckContext.shared` made once: the value (or what stopped it) and how."""

    value: Any
    error: BaseException | None
    exchanges: list[Exchange]
    state: Any
    maker: str
    requirements: tuple[str, ...]
    notes: list[str] = field(default_factory=list)


class CheckContext:
    """The per-check API. Requests made through it are recorded as the check's evidence."""

    def __init__(self, run: Run, spec: CheckSpec, session: Any):
        self.run = run
        self.info = spec
        self.session = session
        """The protocol's session (a ``ProtocolSession``; a subclass names its own type)."""
        self.evidence = Evidence()
        self.deadline = time.monotonic() + (spec.deadline or run.options.deadline)
        self.requests_at_start = session.requests
        """The request count when the check began (the report states what each check sent)."""

    # verdicts ------------------------------------------------------------------------------------

    def fail(
        self,
        message: str,
        evidence: object = None,
        *,
        expected: str | None = None,
        requirement: str | None = None,
    ) -> NoReturn:
        """End the check with a finding; ``requirement`` names the id it breaks when the check cites
        several (or it is another id's): the finding is reported at that requirement's level."""
        raise CheckFailure(
            message,
            expected=expected,
            exchange=self._exchange(evidence),
            requirements=(requirement,) if requirement else (),
        )

    def expect(
        self,
        condition: object,
        message: str,
        evidence: object = None,
        *,
        expected: str | None = None,
        requirement: str | None = None,
    ) -> None:
        """Fail with ``message`` (the finding) unless ``condition`` is true."""
        if not condition:
            self.fail(message, evidence, expected=expected, requirement=requirement)

    def precondition_failed(
        self,
        message: str,
        evidence: object,
        *,
        step: str,
        requirement: str,
        expected: str | None = None,
    ) -> NoReturn:
        """A step the check depends on broke ``requirement``: the check is ``blocked`` under it (or
        fails, when the check itself asks about that requirement)."""
        raise PreconditionFailed(
            message, step=step, requirement=requirement, expected=expected, exchange=self._exchange(evidence)
        )

    def warn(
        self,
        message: str,
        evidence: object = None,
        *,
        requirements: tuple[str, ...] = (),
        requirement: str | None = None,
    ) -> None:
        """Record a warning (a SHOULD not met, or a convention worth noting) and carry on.

        ``requirement``/``requirements`` name the ids it is about when they are not the check's own."""
        cited = requirements or ((requirement,) if requirement else self.info.requirements)
        self.evidence.warnings.append(Warn(message, cited, self._exchange(evidence)))

    def note(self, message: str) -> None:
        """Record an informational finding (no effect on the outcome), once."""
        if message not in self.evidence.notes:
            self.evidence.notes.append(message)

    def skip(self, reason: str) -> NoReturn:
        pytest.skip(reason)

    def reattribute(self, failure: CheckFailure) -> CheckFailure:
        """The failure as the root cause it stands for, when the protocol knows better than the check
        (by default the failure itself)."""
        return failure

    def _exchange(self, evidence: object) -> Exchange | None:
        found = exchange_of(evidence)
        if found is not None:
            return found
        return self.evidence.exchanges[-1] if self.evidence.exchanges else None

    # shared steps --------------------------------------------------------------------------------

    def shared_made(self, name: str) -> bool:
        """Whether :meth:`shared` already made ``name`` in this run (this worker) without a problem: a
        check that can use what it made, but must not be the one to make it, asks first."""
        entry = self.run.cache.get(SHARED_KEY, {}).get(name)
        return entry is not None and entry.error is None

    def shared(self, name: str, make: Callable[[Any], T]) -> T:
        """``make(context)`` once per run (per worker), for read-only checks that can share what it
        made (cells a check only reads, lists, searches): each later check gets a copy of the value,
        the requests that made it as its own evidence (not sent again) and the maker's protocol state
        (:meth:`_shared_state`, such as the agents in their roles).

        The value may hold the replies (anything with an ``.exchange``) and the findings the maker
        recorded: in each check's copy they are bound to that check's evidence (the same exchanges),
        so a check judges a shared reply exactly as one it sent. A step that broke while making it
        blocks every check sharing it; a finding while making it is the first check's failure and a
        broken step (under the requirement it names) for the others.
        """
        made: dict[str, SharedStep] = self.run.cache.setdefault(SHARED_KEY, {})
        entry = made.get(name)
        if entry is None:
            start = len(self.evidence.exchanges)
            try:
                value: Any = make(self)
                error: BaseException | None = None
            except (CheckFailure, pytest.skip.Exception, ToolError) as exc:
                value, error = None, exc
            entry = SharedStep(
                value,
                error,
                list(self.evidence.exchanges[start:]),
                self._shared_state(),
                self.info.title,
                self.info.requirements,
            )
            made[name] = entry
            if error is not None:
                raise error
            return self._copy_shared(entry)  # type: ignore[no-any-return]
        self._adopt_shared_state(name, entry.state)
        self.evidence.exchanges.extend(entry.exchanges)
        self.note(f"uses {name!r}, made once by the check {entry.maker!r} (requests shown)")
        error = entry.error
        if isinstance(error, CheckFailure) and not isinstance(error, PreconditionFailed):
            requirement = (error.requirements or entry.requirements)[0]
            raise PreconditionFailed(
                error.message,
                step=f"making {name!r}",
                requirement=requirement,
                expected=error.expected,
                exchange=error.exchange,
            )
        if error is not None:
            raise error
        return self._copy_shared(entry)  # type: ignore[no-any-return]

    @staticmethod
    def _copy_shared(entry: SharedStep) -> Any:
        """A deep copy of the value in which the exchanges stay the recorded ones (replies and findings
        in the value point at the check's own evidence)."""
        memo: dict[int, Any] = {id(exchange): exchange for exchange in entry.exchanges}
        return copy.deepcopy(entry.value, memo)

    def _shared_state(self) -> Any:
        """Protocol state a shared step's maker held, which later checks must adopt (None: none)."""
        return None

    def _adopt_shared_state(self, name: str, state: Any) -> None:
        """Adopt :meth:`_shared_state` of a shared step's maker (raise ToolError when it clashes)."""
