"""OpenAPI-driven fuzzing of a protocol's REST server with schemathesis and hypothesis (the ``fuzz`` area).

The engine names no protocol: a :class:`FuzzProfile` (``FuzzConfig.profile``) gives it the protocol's
route prefix, its bundled contract, which checks run at which severity citing which requirement ids
(the policy), how its error envelope looks, and how a run keeps to its own data (``isolate``,
``created_id``). Each protocol package with a REST contract builds its own profile beside its checks.

:func:`run_fuzz` loads the contract (the profile's bundled one by default) and runs the schemathesis
engine against the server: the examples, coverage and fuzzing phases in positive and negative generation
modes, then the stateful phase through the OpenAPI links the contract declares (create, then read /
patch / delete the id it returned). Every request carries the configured headers. After the engine,
deterministic unusual-input probes (non-ASCII text, huge numbers, deep nesting) are sent, and the 5xx
reproductions are minimised. What the checks found becomes :class:`FuzzFinding` objects cited by the
profile's requirement ids, deduplicated per check x operation x status. Our own check: every 4xx from a
protocol route uses the profile's error envelope, except 404/405 outside its routes.

Nothing raises out of :func:`run_fuzz`, and it returns within ``2 * seconds`` of wall time: server
problems are findings, tool problems (unreachable server, unusable contract) are ``errors``.

:func:`fetch_served_contract` and :func:`compare_served_contract` report where the server's own OpenAPI
document differs from ours (routes, methods, declared statuses).

Modules: ``_model`` (public types, the profile), ``_checks`` (check wrappers, envelope check),
``_collect`` (findings store, curl lines), ``_engine`` (schemathesis configuration, bounds, events),
``_replay`` (probes, minimisation), ``_contract`` (the served document).
"""

from __future__ import annotations

from typing import Any

from amp_conformance.fuzz._contract import compare_served_contract, fetch_served_contract, load_openapi
from amp_conformance.fuzz._engine import run_fuzz
from amp_conformance.fuzz._model import (
    CHECK_NAMES,
    FAIL,
    OFF,
    WARN,
    FuzzConfig,
    FuzzFinding,
    FuzzProfile,
    FuzzResult,
    Policy,
)

__all__ = [
    "CHECK_NAMES",
    "FAIL",
    "OFF",
    "WARN",
    "FuzzConfig",
    "FuzzFinding",
    "FuzzProfile",
    "FuzzResult",
    "Policy",
    "compare_served_contract",
    "fetch_served_contract",
    "judged_run",
    "load_openapi",
    "run_fuzz",
]


def judged_run(context: Any, result: FuzzResult, what: str) -> FuzzResult:
    """A fuzz run as a check states it: its figures and seed as a note, the tool's own problems as
    notes, and a run that sent nothing as the tool's error (never a verdict on the server)."""
    from amp_conformance.engine.outcomes import ToolError

    context.note(
        f"fuzzed {result.operations} {what} with {result.examples} requests in {result.seconds:.1f} s "
        f"(seed {result.seed}; rerun with --seed {result.seed})"
    )
    if result.examples == 0:
        raise ToolError("the fuzz run sent no request: " + "; ".join(result.errors or ["no reason given"]))
    for error in result.errors:
        context.note(f"fuzz tool problem: {error}")
    return result
