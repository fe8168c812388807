"""Compare an implementer's OpenAPI document with our bundled contract (AMP-OAS-02, AMP-OAS-04).

Reported: routes and methods we declare that the document lacks, routes and methods it adds,
statuses we declare on an operation that it does not, and 4xx responses whose body is not the
``{"error": {"code", "message", "details"}}`` envelope. Path-parameter names are ignored
(``{id}`` matches ``{memory_id}``) and paths relative to an ``…/amp/v1`` server URL are completed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from amp_conformance.engine.resources import load_contract
from amp_conformance.validator.openapi import (
    Operation,
    RefError,
    check_document,
    declares,
    envelope_problem,
    operations,
    statuses,
)


@dataclass(frozen=True, slots=True)
class ContractDifference:
    """One difference: ``METHOD /route: message``; ``code`` is the kind, ``status`` the response if any."""

    method: str
    route: str
    code: str
    message: str
    status: str | None = None

    def __str__(self) -> str:
        return f"{self.method} {self.route}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare_contract(
    doc: Mapping[str, Any], ours: Mapping[str, Any] | None = None
) -> list[ContractDifference]:
    """Differences of ``doc`` from ``ours`` (default: the bundled ``openapi.json``), ours' order first.

    Raises ``DocumentError`` when either is not an OpenAPI document (no ``paths`` object, or a path
    item ``$ref`` that does not resolve).
    """
    check_document(doc)
    reference: Mapping[str, Any] = load_contract("openapi.json", "amp01") if ours is None else ours
    check_document(reference)
    expected = {op.key: op for op in operations(reference)}
    actual = {op.key: op for op in operations(doc)}
    expected_routes = {route for route, _ in expected}
    actual_routes = {route for route, _ in actual}
    differences: list[ContractDifference] = []
    for key, op in expected.items():
        theirs = actual.get(key)
        if theirs is None:
            if key[0] in actual_routes:
                differences.append(_diff(op, "missing-method", "method missing (our contract declares it)"))
            else:
                differences.append(_diff(op, "missing-route", "route missing (our contract declares it)"))
            continue
        differences.extend(_status_differences(op, theirs))
    for key, op in actual.items():
        if key not in expected:
            code = "extra-method" if key[0] in expected_routes else "extra-route"
            kind = "method" if code == "extra-method" else "route"
            differences.append(_diff(op, code, f"{kind} not in our contract"))
    for op in actual.values():
        differences.extend(_envelope_differences(op))
    return differences


def _diff(op: Operation, code: str, message: str, status: str | None = None) -> ContractDifference:
    return ContractDifference(op.method, op.route, code, message, status)


def _status_differences(ours: Operation, theirs: Operation) -> list[ContractDifference]:
    declared = statuses(theirs)
    missing = sorted(s for s in statuses(ours) if s != "default" and not declares(declared, s))
    found = []
    for status in missing:
        kind = "error status" if status[:1] in "45" else "status"
        found.append(
            _diff(
                theirs,
                "undeclared-status",
                f"{kind} {status} not declared (our contract declares it)",
                status,
            )
        )
    return found


def _envelope_differences(op: Operation) -> list[ContractDifference]:
    found = []
    for status in sorted(statuses(op)):
        if not status.startswith("4"):
            continue
        try:
            problem = envelope_problem(op, status)
        except RefError as exc:
            found.append(_diff(op, "unresolvable-ref", f"{status} response: {exc}", status))
            continue
        if problem is not None:
            found.append(_diff(op, "no-error-envelope", f"{status} response {problem}", status))
    return found
