"""Which AMP v0.1 requirement each validator finding breaks, and at which level (issue 10 §3).

The catalogue is the authority: a cell that lacks members only the catalogue's SHOULD asks for
(AMP-CELL-03: every sub-field present) is valid with warnings; a member the upstream cell schema
requires is a MUST (AMP-CELL-02, -01, -17). A contract difference is held to AMP-OAS-02/-04/-03,
whose level for documents other than our own is SHOULD; an undeclared 404 where the document
declares 403 is the upstream convention for unknown ids (requirements.md C-01), reported as a
convention, never as a difference.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from amp_conformance.amp01.cell_rules import UPSTREAM_REQUIRED as UPSTREAM_REQUIRED
from amp_conformance.amp01.cell_rules import cell_requirement as cell_requirement
from amp_conformance.amp01.requirements import catalogue
from amp_conformance.validator.contract import ContractDifference
from amp_conformance.validator.openapi import declares, operations, route_key, statuses

#: The contract requirements' level for a document other than our reference server's (requirements.md
#: AMP-OAS-02: "MUST for our reference server; SHOULD for others"; AMP-OAS-03 and -04 are SHOULD).
CONTRACT_LEVEL: Final = "SHOULD"
_DECLARED_ERRORS: Final = ("401", "403", "409")
_UNKNOWN_ID_REQUIREMENTS: Final = ("AMP-READ-10", "AMP-PATCH-19", "AMP-DEL-08")


def level_of(requirement: str) -> str:
    """The catalogue's level of a requirement id."""
    return str(catalogue().requirements[requirement].level)


def contract_requirement(difference: ContractDifference) -> str:
    if difference.code == "no-error-envelope" or (
        difference.code == "undeclared-status" and difference.status in _DECLARED_ERRORS
    ):
        return "AMP-OAS-04"
    if difference.code == "unresolvable-ref":
        return "AMP-OAS-03"
    return "AMP-OAS-02"


def cite_contract(
    differences: Iterable[ContractDifference], document: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(differences with requirement and level, conventions found) for a compared document."""
    declared = {(route_key(op.route), op.method): statuses(op) for op in operations(document)}
    cited: list[dict[str, Any]] = []
    upstream_ops: list[str] = []
    for difference in differences:
        own = declared.get((route_key(difference.route), difference.method), set())
        if difference.code == "undeclared-status" and difference.status == "404" and declares(own, "403"):
            upstream_ops.append(f"{difference.method} {difference.route}")
            continue
        requirement = contract_requirement(difference)
        cited.append({**difference.as_dict(), "requirement": requirement, "level": CONTRACT_LEVEL})
    conventions = []
    if upstream_ops:
        conventions.append(
            {
                "id": "C-01",
                "requirements": list(_UNKNOWN_ID_REQUIREMENTS),
                "convention": "unknown id answered 403 (upstream contract)",
                "message": (
                    "unknown ids are answered 403 as in the upstream contract, not 404 NOT_FOUND as in the "
                    "API reference; both are documented and accepted (requirements.md C-01)"
                ),
                "operations": upstream_ops,
            }
        )
    return cited, conventions
