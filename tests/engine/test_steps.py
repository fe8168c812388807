"""Declared shared steps (engine.steps): the recorder, the declaration checks, the work units."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from amp_conformance.engine import check_registry, marking, parallel, registry
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import CheckFailure, PreconditionFailed, ToolError
from amp_conformance.engine.parallel import units as parallel_units
from amp_conformance.engine.spec import CheckSpec
from amp_conformance.engine.steps import Recorder, Step, declared, roles_of
from amp_conformance.engine.vocabulary import Level


class FakeContext:
    """What a step needs of a CheckContext: evidence, the spec's uses, and ``shared`` made once."""

    def __init__(self, made: dict[str, tuple[Any, list[Exchange]]], uses: tuple[str, ...]):
        self.evidence = SimpleNamespace(exchanges=[])
        self.check_spec = SimpleNamespace(uses=uses)
        self._made = made

    def send(self, path: str) -> Exchange:
        exchange = Exchange("GET", path, {}, None, status=200)
        self.evidence.exchanges.append(exchange)
        return exchange

    def shared(self, name: str, make: Callable[[Any], Any]) -> Any:
        if name not in self._made:
            start = len(self.evidence.exchanges)
            value = make(self)
            self._made[name] = (value, list(self.evidence.exchanges[start:]))
            return value
        value, exchanges = self._made[name]
        self.evidence.exchanges.extend(exchanges)  # as the engine does: the maker's requests as evidence
        return value

    def shared_made(self, name: str) -> bool:
        return name in self._made


def _make(context: FakeContext, rec: Recorder) -> str:
    context.send("/unlabelled")
    rec("second", context.send("/second"))
    try:
        raise PreconditionFailed(
            "broken", step="reading", requirement="AMP-READ-01", exchange=context.send("/x")
        )
    except CheckFailure as failure:
        return repr(rec.failure(failure))


STEP: Step[Any, Any, Exchange] = Step("test:steps:sample", _make, roles=("a", "b"), reply=lambda e: e)


def test_a_label_reads_back_the_same_reply_in_a_later_check() -> None:
    made: dict[str, Any] = {}
    maker = FakeContext(made, (STEP.name,))
    first = STEP(maker)
    reader = FakeContext(made, (STEP.name,))
    reader.send("/the reader's own request first")
    second = STEP(reader)
    assert first["second"].url == "/second" and second["second"] is reader.evidence.exchanges[2]
    assert "second" in second and "unlabelled" not in second
    assert STEP.made(reader)


def test_a_kept_failure_comes_back_with_the_readers_exchange() -> None:
    context = FakeContext({}, (STEP.name,))
    log = context.evidence.exchanges
    rec = Recorder(log)
    failure = PreconditionFailed(
        "broken", step="reading", requirement="AMP-READ-01", exchange=context.send("/x")
    )
    frozen = rec.failure(failure)
    again = frozen.failure(log[0])
    assert (
        isinstance(again, PreconditionFailed)
        and again.exchange is log[0]
        and again.requirement == "AMP-READ-01"
    )


def test_a_step_the_check_does_not_declare_is_a_tool_error() -> None:
    with pytest.raises(ToolError, match="uses="):
        STEP(FakeContext({}, ()))
    with pytest.raises(ToolError, match="uses="):
        STEP.made(FakeContext({}, ("another",)))


def test_a_label_must_be_a_reply_of_the_step() -> None:
    rec = Recorder([])
    with pytest.raises(ToolError):
        rec("stray", Exchange("GET", "/", {}, None))


def test_a_step_name_is_declared_once() -> None:
    assert declared(STEP.name) is STEP
    with pytest.raises(ValueError, match="declared twice"):
        Step(STEP.name, _make, reply=lambda e: e)


def test_roles_of_takes_each_role_once_in_declaration_order() -> None:
    other: Step[Any, Any, Exchange] = Step("test:steps:other", _make, roles=("b", "c"), reply=lambda e: e)
    assert roles_of((STEP.name, other.name, "undeclared")) == ("a", "b", "c")


def test_uses_takes_declared_steps_only() -> None:
    with pytest.raises(ValueError, match="uses="):
        marking.check("AMP-READ-01", uses=("test:steps:sample",))  # type: ignore[arg-type]
    mark = marking.check("AMP-READ-01", uses=(STEP,))
    assert mark.kwargs["uses"] == (STEP.name,)


def test_checks_sharing_a_step_are_one_work_unit_across_modules() -> None:
    """The policy-change cell is declared once and read by test_access and test_identity: one unit, so
    a parallel run sends the requests a serial run does."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
        from amp_conformance.amp01.checks.access.steps import POLICY_CELL

        protocol = registry.get("amp-0.1")
        unit_of = parallel.scope_finder(protocol)
        users = [spec for spec in check_registry.checks_of(protocol.name) if POLICY_CELL.name in spec.uses]
    assert {spec.nodeid.split("::")[0] for spec in users} == {"test_access.py", "test_identity.py"}
    assert {unit_of(spec.nodeid) for spec in users} == {f"step:{POLICY_CELL.name}"}


def _spec(name: str, uses: tuple[str, ...] = (), adopts: tuple[str, ...] = ()) -> CheckSpec:
    return CheckSpec(("AMP-READ-01",), Level("MUST"), "read", name, name=name, uses=uses, adopts=adopts)


def test_checks_linked_through_a_step_are_one_unit_and_adopting_links_nothing() -> None:
    specs = [
        _spec("first", uses=("a",)),
        _spec("second", uses=("b", "a")),  # links b to a: one unit, named after a (seen first)
        _spec("third", uses=("b",)),
        _spec("fourth", uses=("c",), adopts=("a",)),  # reads a, made in a's unit: c stays its own
        _spec("serial", uses=("c", "a")),  # a serial group's check joins no unit
    ]
    units = parallel_units.step_unit_names(specs, lambda spec: "passes" if spec.title == "serial" else None)
    assert units == {"a": "step:a", "b": "step:a", "c": "step:c"}


def test_an_adopted_step_may_be_read_and_its_roles_come_first() -> None:
    made: dict[str, Any] = {}
    reader = FakeContext(made, ())
    reader.check_spec.adopts = (STEP.name,)
    assert STEP(reader).value
    assert roles_of((STEP.name,)) == ("a", "b")


def test_a_real_context_shares_a_declared_step_with_its_labels() -> None:
    """Through ``CheckContext.shared``: the maker's labelled reply is, in a later check, the same
    exchange in that check's own evidence."""
    from amp_conformance.engine.context import CheckContext
    from amp_conformance.engine.outcomes import Evidence

    cache: dict[str, Any] = {}

    def context() -> CheckContext:
        made = CheckContext.__new__(CheckContext)
        made.run = SimpleNamespace(cache=cache)  # type: ignore[assignment]
        made.evidence = Evidence()
        made.check_spec = _spec("a check", uses=(STEP.name,))
        return made

    def send(made: CheckContext, path: str) -> Exchange:
        exchange = Exchange("GET", path, {}, None, status=200)
        made.evidence.exchanges.append(exchange)
        return exchange

    def make(made: Any, rec: Recorder) -> str:
        send(made, "/first")
        rec("second", send(made, "/second"))
        return "value"

    step: Step[Any, str, Exchange] = Step("test:steps:real", make, reply=lambda e: e)
    first, later = context(), context()
    first.check_spec = _spec("a check", uses=(step.name,))
    later.check_spec = _spec("another", uses=(step.name,))
    assert step(first)["second"].url == "/second"
    send(later, "/its own")
    read = step(later)
    assert read.value == "value" and read["second"] is later.evidence.exchanges[2]


def test_the_declared_roles_are_taken_first_whatever_the_check_asks_for() -> None:
    """With API keys a check maps its roles onto the keys in order of first use: a check declaring a
    step played by "a" and "b" that asks for "b" first still gives "a" the first key, as the step's
    maker did, so the step is adopted without a clash."""
    from amp_conformance.amp01.context import Amp01Context
    from amp_conformance.amp01.session import Agent

    class Session:
        options = SimpleNamespace(keys_given=True)
        keys_mode = True

        def agent(self, role: str, *, taken: int | None = None) -> Agent:
            return Agent(role, f"agent-{taken}", "key")

        def fetch_spec(self) -> dict[str, Any]:
            return {"capabilities": {}}

    amp = Amp01Context.__new__(Amp01Context)
    amp.session = Session()  # type: ignore[assignment]
    amp._roles = {}
    amp.check_spec = _spec("a check", uses=(STEP.name,))
    assert amp.agent_id("b") == "agent-1"
    assert amp.agent_id("a") == "agent-0"
    undeclared = Amp01Context.__new__(Amp01Context)
    undeclared.session = Session()  # type: ignore[assignment]
    undeclared._roles = {}
    undeclared.check_spec = _spec("another")
    assert undeclared.agent_id("b") == "agent-0"
