"""OpenAPI-driven fuzzing of an AMP server with schemathesis and hypothesis (the ``fuzz`` area).

:func:`run_fuzz` loads the contract (our bundled one by default) and runs the schemathesis engine against
the server: the examples, coverage and fuzzing phases in positive and negative generation modes, then the
stateful phase through the OpenAPI links the contract declares (create, then read / patch / delete the id
it returned). Every request carries the configured identity headers. After the engine, deterministic
unusual-input probes (non-ASCII text, huge numbers, deep nesting) are sent, and the 5xx reproductions are
minimised. What the checks found becomes :class:`FuzzFinding` objects cited by AMP requirement ids,
deduplicated per check x operation x status.

Which schemathesis checks run, at which severity and why, is the table :data:`CHECK_POLICY` (the reasons
are next to each entry in ``_model.py``). Our own check: every 4xx from an AMP route uses the error
envelope, except 404/405 outside the AMP routes (requirements.md C-29).

Nothing raises out of :func:`run_fuzz`, and it returns within ``2 * seconds`` of wall time: server
problems are findings, tool problems (unreachable server, unusable contract) are ``errors``.

:func:`fetch_served_contract` and :func:`compare_served_contract` report where the server's own OpenAPI
document differs from ours (routes, methods, declared statuses).

Modules: ``_model`` (public types, the check policy), ``_checks`` (check wrappers, envelope check),
``_collect`` (findings store, curl lines), ``_engine`` (schemathesis configuration, bounds, events),
``_replay`` (probes, minimisation), ``_contract`` (the served document).
"""

from __future__ import annotations

from amp_conformance.fuzz._contract import compare_served_contract, fetch_served_contract
from amp_conformance.fuzz._engine import run_fuzz
from amp_conformance.fuzz._model import CHECK_POLICY, FAIL, OFF, WARN, FuzzConfig, FuzzFinding, FuzzResult

__all__ = [
    "CHECK_POLICY",
    "FAIL",
    "OFF",
    "WARN",
    "FuzzConfig",
    "FuzzFinding",
    "FuzzResult",
    "compare_served_contract",
    "fetch_served_contract",
    "run_fuzz",
]
