"""Running the schemathesis engine: its configuration, the event consumer, the time bounds.

Bounds: ``max_examples`` per operation and phase; the engine gets about 70% of ``seconds`` as its own
time budget (it stops generating when that is spent) and is stopped after one pass of every phase even
when budget is left; the unusual-input probes and the 5xx minimisation use the rest. A watchdog
interrupts the engine when ``seconds`` is spent and abandons it at the latest at ``2 * seconds`` of wall
time; no request of our own starts if it could end after that. Hypothesis deadlines are off (network
calls), its example database is off, and the seed makes a run reproducible.
"""

from __future__ import annotations

import copy
import math
import random
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from amp_conformance.fuzz._checks import (
    POSITIVE_STATUSES,
    WRAPPER_PREFIX,
    builtin_checks,
    failure_text,
    operation_label,
    registered_checks,
)
from amp_conformance.fuzz._collect import Collector, secret_headers
from amp_conformance.fuzz._model import FuzzConfig, FuzzProfile, FuzzResult, origin_of, server_prefix
from amp_conformance.fuzz._replay import minimise_findings, probe_unusual_inputs

if TYPE_CHECKING:
    from schemathesis.engine.core import EventStream
    from schemathesis.engine.events import EngineEvent

_RUN_LOCK = threading.Lock()


_HTTP_METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _count_operations(contract: Mapping[str, Any]) -> int:
    paths = contract.get("paths")
    if not isinstance(paths, Mapping):
        return 0
    return sum(
        1 for item in paths.values() if isinstance(item, Mapping) for key in item if key in _HTTP_METHODS
    )


def _drop_global_operations(contract: dict[str, Any], profile: FuzzProfile) -> None:
    """Leave out the profile's operations with store-wide effects (the suite's --allow-global-effects)."""
    paths = contract.get("paths")
    if not isinstance(paths, dict):
        return
    for path in list(paths):
        item = paths[path]
        if not isinstance(item, dict):
            continue
        for method in [key for key in item if key in _HTTP_METHODS]:
            if profile.global_operation(str(path), method):
                del item[method]
        if not any(key in item for key in _HTTP_METHODS):
            del paths[path]


def _path_prefix(contract: Mapping[str, Any], api_prefix: str) -> str:
    """What to put between the origin and the contract's paths.

    A bundled contract's paths carry the API prefix (its server is the origin); a document whose paths
    are relative to a server URL such as ``/api`` gets that prefix.
    """
    paths = contract.get("paths")
    if isinstance(paths, Mapping) and any(str(path).startswith(api_prefix) for path in paths):
        return ""
    return server_prefix(contract)


def _schemathesis_config(
    config: FuzzConfig, *, origin: str, seed: int, max_time: int, check_names: list[str]
) -> Any:
    from schemathesis.config import SchemathesisConfig

    builtins = [name for name in builtin_checks() if name != "max_response_time"]
    checks: dict[str, Any] = {name: {"enabled": False} for name in builtins}
    # Our wrappers stand in for the schemathesis checks (see CHECK_POLICY); the built-ins are off.
    checks.update({name: {"enabled": True} for name in check_names})
    checks["positive_data_acceptance"] = {"enabled": False, "expected-statuses": POSITIVE_STATUSES}
    generation = {
        "mode": "all",
        "max-examples": max(1, config.max_examples),
        "database": "none",
        "deterministic": False,
        "unique-inputs": True,
    }
    data: dict[str, Any] = {
        "seed": seed,
        "max-time": max_time,
        "suppress-health-check": ["all"],
        "cache": {"enabled": False},
        "base-url": origin,
        "headers": dict(config.headers),
        "workers": 1,
        "request-timeout": config.request_timeout,
        # Keep exploring an operation after a failure: one finding per check x operation x status is the
        # goal, and the engine does not shrink anyway (it stops the hypothesis test at the first failure).
        "continue-on-failure": True,
        "tls-verify": True,
        "output": {"sanitization": {"enabled": False}},
        "generation": generation,
        "checks": checks,
        "phases": {
            "examples": {"enabled": True},
            "coverage": {"enabled": True},
            "fuzzing": {"enabled": True},
            "stateful": {"enabled": True, "max-steps": max(2, config.stateful_steps)},
        },
    }
    return SchemathesisConfig.from_dict(data)


def _contain_exceptions(app: Any) -> Any:
    """ASGI wrapper: an exception escaping the application becomes a 500, as a real server would send.

    schemathesis's in-process ASGI client re-raises application exceptions, which would make them tool
    errors instead of 5xx findings. Lifespan events are answered here and not forwarded: the
    application's owner runs its lifespan.
    """

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "lifespan":
            while True:
                message = await receive()
                if message.get("type") == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message.get("type") == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        started = False

        async def tracking_send(message: dict[str, Any]) -> None:
            nonlocal started
            if message.get("type") == "http.response.start":
                started = True
            await send(message)

        try:
            await app(scope, receive, tracking_send)
        except Exception:
            if started:
                return
            await send(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8")],
                }
            )
            await send({"type": "http.response.body", "body": b"Internal Server Error"})

    return wrapped


def _in_process_app(config: FuzzConfig) -> tuple[Any, str | None]:
    """The application to fuzz in-process, or None for the network; plus an error message."""
    from schemathesis.transport import is_asgi_app

    app = config.app
    if app is None and config.transport is not None:
        app = getattr(config.transport, "app", None)
        if app is None:
            return None, (
                f"transport {type(config.transport).__name__} cannot be used: schemathesis sends requests "
                "through `requests`, not httpx; pass an ASGI/WSGI application (FuzzConfig.app) "
                "or no transport"
            )
    if app is None:
        return None, None
    return (_contain_exceptions(app) if is_asgi_app(app) else app), None


def _release_lifespan(app: Any) -> None:
    """Drop schemathesis's record of the in-process application (best effort, private API)."""
    try:
        from schemathesis.python import asgi

        with asgi._LOCK:
            lifespan = asgi._LIFESPANS.pop(id(app), None)
            asgi._STARTUP_LOCKS.pop(id(app), None)
        if lifespan is not None:
            lifespan.stop()
    except Exception:
        pass


class _Run:
    """Consumes the engine's events on a worker thread so the caller can enforce the wall-time bound."""

    def __init__(self, stream: EventStream, collector: Collector) -> None:
        self.stream = stream
        self.collector = collector
        self.done = threading.Event()
        self.elastic_started: set[str] = set()
        self.thread = threading.Thread(target=self._consume, name="amp-fuzz", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stream.stop()

    def _consume(self) -> None:
        try:
            for event in self.stream:
                try:
                    self._handle(event)
                except Exception as exc:  # a bug in reading one event must not stop the engine
                    self.collector.error(f"cannot read a fuzz engine event: {type(exc).__name__}: {exc}")
        except BaseException as exc:  # the engine itself failed: a tool problem
            self.collector.error(f"fuzz engine error: {type(exc).__name__}: {exc}")
        finally:
            self.done.set()

    def _handle(self, event: EngineEvent) -> None:
        from schemathesis.engine import events
        from schemathesis.engine.run import ELASTIC_PHASES

        if isinstance(event, events.PhaseStarted) and event.phase.name in ELASTIC_PHASES:
            # With a time budget the engine repeats fuzzing and stateful testing until it is spent;
            # one pass is what `max_examples` asks for, so stop when the second pass begins.
            if event.phase.name in self.elastic_started:
                self.stream.stop()
            self.elastic_started.add(event.phase.name)
        elif isinstance(event, events.ScenarioFinished):
            self._scenario(event)
        elif isinstance(event, events.NonFatalError):
            self._non_fatal(event)
        elif isinstance(event, events.FatalError):
            self.collector.error(f"fuzz engine error: {event.exception!r}")

    def _scenario(self, event: Any) -> None:
        recorder = event.recorder
        self.collector.count(sum(1 for item in recorder.interactions.values() if item.response is not None))
        for case_id, interaction in recorder.interactions.items():
            case_node = recorder.cases.get(case_id)
            if interaction.response is not None and case_node is not None:
                self.collector.offer_base(case_node.value, interaction.response.status_code)
        for case_id, nodes in recorder.checks.items():
            for node in nodes:
                info = node.failure_info
                if info is None:
                    continue
                check = str(node.name).removeprefix(WRAPPER_PREFIX)
                case_node = recorder.cases.get(case_id)
                interaction = recorder.interactions.get(case_id)
                response = interaction.response if interaction is not None else None
                status = response.status_code if response is not None else None
                if case_node is not None:
                    operation = operation_label(response, case_node.value)
                else:
                    operation = str(getattr(info.failure, "operation", None) or event.label or "?")
                failure = info.failure
                inner = getattr(failure, "exception", None)
                requirement = getattr(inner, "requirement", None) or self.collector.profile.requirement_for(
                    check, status
                )
                self.collector.add(
                    check=check,
                    operation=operation,
                    status=status,
                    message=failure_text(failure),
                    curl=str(info.code_sample or ""),
                    requirement=requirement,
                    case=case_node.value if case_node is not None and check == "not_a_server_error" else None,
                )

    def _non_fatal(self, event: Any) -> None:
        import requests
        from schemathesis.engine.errors import UnresponsiveOperationError, is_connection_refused

        error = event.value
        info = event.info
        if isinstance(error, requests.ConnectionError) and is_connection_refused(error):
            self.collector.error(f"cannot reach the server at {self.collector.origin}: {info.message}")
            return
        transport_errors = (requests.Timeout, requests.ConnectionError, UnresponsiveOperationError)
        transport = isinstance(error, transport_errors)
        if transport and event.related_to_operation and info.code_sample:
            self.collector.add(
                check="transport_error",
                operation=str(event.label),
                status=None,
                message=f"{info.title}: {info.message}",
                curl=str(info.code_sample),
            )
            return
        self.collector.error(f"{event.label}: {info.title}: {info.message}")


def run_fuzz(config: FuzzConfig) -> FuzzResult:
    """Fuzz the server described by ``config``; never raises."""
    started = time.monotonic()
    seed = config.seed if config.seed is not None else random.SystemRandom().randrange(2**31)
    collector = Collector(
        seed=seed,
        origin=origin_of(config.base_url, config.profile.api_prefix),
        secrets=secret_headers(config.headers),
        profile=config.profile,
        on_requests=config.on_requests,
    )
    # The promise is 2 * seconds of wall time; keep a little for assembling the result.
    hard_deadline = started + 2 * config.seconds - min(1.0, 0.1 * config.seconds)
    # One run at a time: the checks are registered process-wide for the duration of a run.
    isolation = _Isolation(config.profile, config.owner_id, config.limiter)
    acquired = _RUN_LOCK.acquire(timeout=max(hard_deadline - time.monotonic() - config.seconds, 0.1))
    if not acquired:
        collector.error("another fuzz run is still in progress in this process")
    else:
        try:
            _run(config, collector, isolation, started=started, hard_deadline=hard_deadline)
        except Exception as exc:
            collector.error(f"fuzz run failed: {type(exc).__name__}: {exc}")
        finally:
            _RUN_LOCK.release()
        if collector.examples == 0 and not collector.errors():
            # Connections accepted but nothing answered in time: no verdict is possible.
            collector.error(
                f"the server at {collector.origin} answered no request within the {config.seconds:g} s "
                f"budget (request timeout {config.request_timeout:g} s)"
            )
    return FuzzResult(
        findings=collector.findings(),
        operations=collector.operations,
        examples=collector.examples,
        seconds=round(time.monotonic() - started, 3),
        seed=seed,
        errors=collector.errors(),
        created=list(isolation.created),
    )


class _Isolation:
    """schemathesis hooks applying the profile's isolation (the run's own owner or scope in every
    request) before each call, and noting what each call created, for the run's cleanup."""

    def __init__(self, profile: FuzzProfile, owner_id: str | None, limiter: Any = None) -> None:
        self.profile = profile
        self.owner_id = owner_id
        self.created: list[str] = []
        self._lock = threading.Lock()
        self.limiter = limiter
        """The run's limiter: each call holds one of its slots from ``before_call`` to its answer."""
        self._slots: dict[int, Any] = {}
        """Thread id -> the slot its call holds."""

    def before_call(self, context: Any, case: Any, kwargs: dict[str, Any]) -> None:
        if self.owner_id is not None and self.profile.isolate is not None:
            self.profile.isolate(case, self.owner_id)
        if self.limiter is not None:
            self._give_back(answered=False)  # a call of this thread that raised before any answer
            slot = self.limiter.acquire()
            with self._lock:
                self._slots[threading.get_ident()] = slot

    def _give_back(self, *, answered: bool) -> None:
        with self._lock:
            slot = self._slots.pop(threading.get_ident(), None)
        if slot is not None:
            slot.done(answered=answered)

    def after_network_error(self, context: Any, case: Any, request: Any) -> None:
        self._give_back(answered=False)

    def after_call(self, context: Any, case: Any, response: Any) -> None:
        self._give_back(answered=True)
        if self.profile.created_id is None:
            return
        created = self.profile.created_id(case, response)
        if created is not None:
            with self._lock:
                self.created.append(created)

    @contextmanager
    def registered(self) -> Iterator[None]:
        from schemathesis.hooks import GLOBAL_HOOK_DISPATCHER

        GLOBAL_HOOK_DISPATCHER.register_hook_with_name(self.before_call, "before_call")
        GLOBAL_HOOK_DISPATCHER.register_hook_with_name(self.after_call, "after_call")
        GLOBAL_HOOK_DISPATCHER.register_hook_with_name(self.after_network_error, "after_network_error")
        try:
            yield
        finally:
            GLOBAL_HOOK_DISPATCHER.unregister(self.before_call)
            GLOBAL_HOOK_DISPATCHER.unregister(self.after_call)
            GLOBAL_HOOK_DISPATCHER.unregister(self.after_network_error)
            with self._lock:  # the slots of calls that raised past both hooks
                left, self._slots = list(self._slots.values()), {}
            for slot in left:
                slot.done(answered=False)


def _run(
    config: FuzzConfig, collector: Collector, isolation: _Isolation, *, started: float, hard_deadline: float
) -> None:
    import schemathesis
    from schemathesis.engine import from_schema

    raw = config.contract if config.contract is not None else config.profile.load_contract()
    contract: dict[str, Any] = copy.deepcopy(dict(raw))
    if not config.allow_global_effects:
        _drop_global_operations(contract, config.profile)
    collector.operations = _count_operations(contract)
    app, problem = _in_process_app(config)
    if problem is not None:
        collector.error(problem)
        return

    # Budget split: the engine gets ~70% of what is left of `seconds` (whole seconds, its unit) and
    # stops generating then; the unusual-input probes and the minimisation of 5xx reproductions use the
    # rest. Nothing starts a request that could end after the hard deadline.
    remaining = config.seconds - (time.monotonic() - started)
    max_time = max(1, math.floor(remaining * 0.7))
    grace = min(max(config.request_timeout, 1.0), max(config.seconds * 0.25, 0.5))
    budget_end = started + config.seconds
    send_deadline = min(budget_end + grace, hard_deadline - config.request_timeout)
    with registered_checks(collector) as check_names, isolation.registered():
        try:
            st_config = _schemathesis_config(
                config,
                origin=collector.origin + _path_prefix(contract, config.profile.api_prefix),
                seed=collector.seed,
                max_time=max_time,
                check_names=check_names,
            )
        except Exception as exc:
            collector.error(f"invalid fuzz configuration: {type(exc).__name__}: {exc}")
            return
        try:
            schema = schemathesis.openapi.from_dict(contract, config=st_config)
        except Exception as exc:
            collector.error(f"cannot load the contract: {type(exc).__name__}: {exc}")
            return
        if app is not None:
            schema.app = app
        try:
            run = _Run(from_schema(schema).execute(), collector)
            run.start()
            # Interrupt the engine if it is still busy when the budget is spent (an in-flight request may
            # need up to request_timeout more); abandon it at the hard deadline whatever it is doing.
            if not run.done.wait(timeout=max(budget_end - time.monotonic(), 0.0)):
                run.stop()
                if not run.done.wait(timeout=max(hard_deadline - time.monotonic(), 0.0)):
                    collector.error(
                        f"the fuzz engine did not stop within {2 * config.seconds:.0f} s; abandoned it "
                        "(a request may hang without honouring the timeout)"
                    )
                    return
            probe_unusual_inputs(
                collector, config.headers, deadline=send_deadline, timeout=config.request_timeout
            )
            # Shrink the 5xx reproductions (the engine does not) with what is left.
            minimise_findings(collector, config.headers, send_deadline)
        finally:
            if app is not None:
                _release_lifespan(app)
