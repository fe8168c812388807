"""The check context: the verdict API every protocol's checks use, and shared steps.

A protocol's context (``Amp01Context``, ``Amp11Context``) subclasses :class:`CheckContext` and adds only its
protocol's verbs. Findings: ``expect`` / ``fail`` name the requirement they break (``requirement=``)
and are reported at its level; ``warn`` and ``note`` record and carry on; ``skip`` ends the check with
a reason; a step the check depends on raises :class:`PreconditionFailed` (``precondition_failed``):
for a check citing the step's requirement a failure, for every other check *blocked* under it.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, NoReturn, Self, TypeVar

import pytest

from amp_conformance.engine.exchange import Exchange, exchange_from_wire, exchange_to_wire
from amp_conformance.engine.outcomes import (
    CheckFailure,
    Evidence,
    PreconditionFailed,
    ToolError,
    TransportFailure,
    Warn,
)
from amp_conformance.engine.shared_store import SharedStore, dumps_step, loads_step

if TYPE_CHECKING:
    from amp_conformance.engine.run import ProtocolSession, Run
    from amp_conformance.engine.spec import CheckSpec

T = TypeVar("T")
SessionT = TypeVar("SessionT", bound="ProtocolSession")
"""The protocol session a context's checks work through (``CheckContext[Amp01Session]``)."""
#: ``run.cache`` key of the shared steps' entries.
SHARED_KEY = "shared-steps"
#: ``run.cache`` key of how many shared steps are being made right now (nested makes).
_MAKING_KEY = "shared-steps-making"
#: ``run.cache`` key of the steps a transport failure broke once (made again by their next user).
_BROKEN_ONCE_KEY = "shared-steps-broken-once"
#: ``run.cache`` key of the steps this worker claimed whose making broke once: still this worker's to make.
_HELD_KEY = "shared-steps-held"


class SharedStepBroken(ToolError):
    """A shared step's exchange broke again when the step was made a second time: one cause, an
    *error* (no verdict on the server). ``reporter``: raised by the check whose making broke (its
    evidence shows the exchange); the other checks built on the step are errored under it with a
    pointer, so the broken exchange is shown once, never once per dependent. Not a
    ``TransportFailure``: re-running a check cannot make the step a third time."""

    def __init__(self, message: str, step: str, reporter: bool = False):
        super().__init__(message)
        self.step = step
        self.reporter = reporter

    def __reduce__(self) -> tuple[object, ...]:
        # a parallel run publishes it with the step (engine.shared_store): keep every member
        return (type(self), (str(self), self.step, self.reporter))


#: The step a broken-step error names: its cause's (``the shared step 'X' broke twice``) or a dependent's.
_STEP_NAMED = re.compile(r"""^(?:blocked by )?the shared step ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def broken_step_named(message: str) -> tuple[str, bool] | None:
    """The shared step a :class:`SharedStepBroken` message names and whether it is a dependent's
    (``blocked by ...``); None for any other message (``report.render_summary`` groups on it)."""
    found = _STEP_NAMED.match(message)
    return (found.group(1), message.startswith("blocked by ")) if found else None


def blocked_by_step_message(name: str, maker: str) -> str:
    """A dependent's error under a shared step broken by transport (``report.render_summary`` groups
    these under their cause by the ``shared step 'NAME'`` they name)."""
    return f"blocked by the shared step {name!r}'s broken exchange (see the check {maker!r})"


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
    foreign: bool = False
    """Made by another worker of a parallel run (``engine.shared_store``) and adopted here."""
    reported: bool = False
    """A foreign step's error was raised by this worker's first check using it."""
    broken: bool = False
    """A transport failure broke it twice (made, then made again): ``error`` is the dependents'."""
    published: bool = False
    """Made here and published for the other workers (``engine.shared_store``)."""


def published_states(run: Run) -> list[object]:
    """The protocol states of the shared steps this worker made and published: what they created may
    be in use in another worker until every worker is done (``engine.shared_store``)."""
    made: dict[str, SharedStep] = run.cache.get(SHARED_KEY, {})
    return [entry.state for entry in made.values() if entry.published]


def release_held_claims(run: Run) -> None:
    """After a check (and its re-run): the steps this worker claimed whose making broke once and that
    no check made again meanwhile are given up (``SharedStore.publish(name, None)``), so that the
    workers waiting for them make their own rather than wait for this one's next user."""
    held: set[str] = run.cache.get(_HELD_KEY, set())
    store: SharedStore | None = getattr(run, "shared_store", None)
    for name in sorted(held):
        if store is not None:
            store.publish(name, None)
    held.clear()


class CheckContext(Generic[SessionT]):
    """The per-check API, generic in its protocol's session
    (``class Amp01Context(CheckContext[Amp01Session])``).
    Requests made through it are recorded as the check's evidence."""

    explicit_evidence = False
    """True for a context whose checks name what each ``expect`` judges: a call naming no evidence is
    then refused (ToolError, passing or not), since its finding would show whatever was sent last."""
    _unnamed: Any = object()  # expect's evidence when a call names none (None is named)

    fresh_steps: bool = False
    """A re-run's context (``plugin._run_again``): every shared step made already is made again, for
    this check alone, so the re-run starts on fresh cells (the first run may have changed the shared
    ones); a step the network broke is made again as :meth:`shared` says."""

    def __init__(self, run: Run, spec: CheckSpec, session: SessionT):
        self.run = run
        self.check_spec = spec
        """The check's declaration (its ``@check``: requirements, level, area, title, steps)."""
        self.session: SessionT = session
        """The protocol's session (what its ``open_session`` made)."""
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
        evidence: object = _unnamed,
        *,
        expected: str | None = None,
        requirement: str | None = None,
    ) -> None:
        """Fail with ``message`` (the finding) unless ``condition`` is true; ``evidence`` is the reply,
        result or exchange judged (unnamed: the check's last exchange, unless ``explicit_evidence``)."""
        if evidence is self._unnamed:
            if self.explicit_evidence:
                raise ToolError(
                    f"expect() names no evidence (the reply or result it judges): {message[:200]}"
                )
            evidence = None
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
        cited = requirements or ((requirement,) if requirement else self.check_spec.requirements)
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

    def shared(self, name: str, make: Callable[[Self], T]) -> T:
        """``make(context)`` once per run, for read-only checks that can share what it made (cells a
        check only reads, lists, searches): each later check gets a copy of the value, the requests
        that made it as its own evidence (not sent again) and the maker's protocol state
        (:meth:`_shared_state`, such as the agents in their roles). In a parallel run the workers
        share it too (``engine.shared_store``): the first to need it makes it, the others adopt it.

        The value may hold the replies (anything with an ``.exchange``) and the findings the maker
        recorded: in each check's copy they are bound to that check's evidence (the same exchanges),
        so a check judges a shared reply exactly as one it sent. A step that broke while making it
        blocks every check sharing it; a finding while making it is the first check's failure (in each
        worker that uses it: the controller keeps the first, as a serial run would) and a broken step
        (under the requirement it names) for the others. A transport failure is no property of the
        step: it is not kept, and the step's next user makes it again, once; broken again, it is one
        cause (:class:`SharedStepBroken`), the others errored under it (:meth:`_broken_by_transport`).
        """
        made: dict[str, SharedStep] = self.run.cache.setdefault(SHARED_KEY, {})
        entry = made.get(name)
        if self.fresh_steps and entry is not None and entry.error is None:
            return make(self)  # a re-run: the step's cells as made may be what the first run changed
        store: SharedStore | None = getattr(self.run, "shared_store", None)
        held: set[str] = self.run.cache.setdefault(_HELD_KEY, set())
        claimed = False
        if entry is None and store is not None:
            claimed = name in held or store.claim(name)
            if not claimed:
                # while making another step, only a step made already: two workers each waiting for
                # the other's would deadlock
                entry = self._adopted(name, store, wait=not self.run.cache.get(_MAKING_KEY))
                if entry is not None:
                    made[name] = entry
        if entry is None:
            start = len(self.evidence.exchanges)
            mark = self._shared_begin()
            self.run.cache[_MAKING_KEY] = self.run.cache.get(_MAKING_KEY, 0) + 1
            try:
                value: Any = make(self)
                error: BaseException | None = None
            except (CheckFailure, pytest.skip.Exception, ToolError) as exc:
                value, error = None, exc
            except BaseException:  # a crash or an interrupt: no worker waits for this step
                if claimed and store is not None:
                    held.discard(name)
                    store.publish(name, None)
                raise
            finally:
                self.run.cache[_MAKING_KEY] -= 1
            raised, error = self._broken_by_transport(name, error, claimed=claimed)
            entry = SharedStep(
                value,
                error,
                list(self.evidence.exchanges[start:]),
                self._shared_state(mark),
                self.check_spec.title,
                self.check_spec.requirements,
                broken=raised is not error,
            )
            made[name] = entry
            if claimed and store is not None:
                held.discard(name)
                data = self._shareable(entry)
                store.publish(name, data)
                entry.published = data is not None
            if raised is not None:
                raise raised
            return self._copy_shared(entry)  # type: ignore[no-any-return]
        if entry.broken and entry.error is not None:  # one cause: its exchanges are the maker's to show
            raise entry.error
        self._adopt_shared_state(name, entry.state, foreign=entry.foreign)
        self.evidence.exchanges.extend(entry.exchanges)
        where = " in another worker" if entry.foreign else ""
        self.note(f"uses {name!r}, made once by the check {entry.maker!r}{where} (requests shown)")
        error = entry.error
        if entry.foreign and not entry.reported and error is not None:
            entry.reported = True  # this worker's first user reports it, as the maker did in its own
            raise error
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

    def _broken_by_transport(
        self, name: str, error: BaseException | None, *, claimed: bool
    ) -> tuple[BaseException | None, BaseException | None]:
        """What this check raises and what the step keeps, when making it ended with ``error``.

        A transport failure is no property of the step: the first time, nothing is kept (the failure
        propagates, so the check is re-run, and the step's next user makes it again; a parallel
        run's claim stays this worker's). The second time, or when a step it needs broke that way,
        the step keeps the error its other users are given (a pointer to this check) and this check
        raises the one cause, with the broken exchange in its evidence."""
        if isinstance(error, SharedStepBroken) and error.reporter:  # a step this one needs broke twice
            return error, SharedStepBroken(
                blocked_by_step_message(error.step, self.check_spec.title), error.step
            )
        if not isinstance(error, TransportFailure):
            return error, error
        broken_once: dict[str, str] = self.run.cache.setdefault(_BROKEN_ONCE_KEY, {})
        if name not in broken_once:
            broken_once[name] = self.check_spec.title
            if claimed:
                self.run.cache[_HELD_KEY].add(name)
            raise error
        cause = SharedStepBroken(
            f"the shared step {name!r} broke twice (made, then made again): {error}", name, True
        )
        return cause, SharedStepBroken(blocked_by_step_message(name, self.check_spec.title), name)

    def _shareable(self, entry: SharedStep) -> bytes | None:
        """The step as another worker can adopt it, or None when its value cannot cross (tried both
        ways here, so that a worker never gets a step it cannot read)."""
        data = dumps_step(entry, Exchange, exchange_to_wire)
        if data is None:
            return None
        try:
            loads_step(data, lambda wire: exchange_from_wire(wire, None))
        except Exception:  # anything unreadable is simply not shared
            return None
        return data

    def _adopted(self, name: str, store: SharedStore, *, wait: bool) -> SharedStep | None:
        """The step another worker made (waiting while it is being made, with ``wait``), or None: make
        it here."""
        data = store.adopt(name, interrupted=lambda: time.monotonic() > self.deadline, wait=wait)
        if data is None:
            return None
        replay = self.session.replay
        try:
            entry = loads_step(data, lambda wire: exchange_from_wire(wire, replay))
        except Exception:  # unreadable after all: make it here
            return None
        if not isinstance(entry, SharedStep):
            return None
        entry.foreign = True
        return entry

    @staticmethod
    def _copy_shared(entry: SharedStep) -> Any:
        """A deep copy of the value in which the exchanges stay the recorded ones (replies and findings
        in the value point at the check's own evidence)."""
        memo: dict[int, Any] = {id(exchange): exchange for exchange in entry.exchanges}
        return copy.deepcopy(entry.value, memo)

    def _shared_begin(self) -> Any:
        """Protocol state before a shared step is made (given back to :meth:`_shared_state`)."""
        return None

    def _shared_state(self, begun: Any) -> Any:
        """Protocol state a shared step's maker held, which later checks must adopt (None: none);
        ``begun``: what :meth:`_shared_begin` said before the step was made."""
        return None

    def _adopt_shared_state(self, name: str, state: Any, *, foreign: bool = False) -> None:
        """Adopt :meth:`_shared_state` of a shared step's maker (raise ToolError when it clashes)."""
