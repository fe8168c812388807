"""Offline validation: memory cells in files or stdin, and OpenAPI documents against our contract.

Public API: ``validate_cell`` (re-exported from ``amp_conformance.amp01.cells``), ``validate_documents`` →
``Report``, ``compare_contract`` → ``list[ContractDifference]``, and the CLI entry points
``validate_main`` / ``validate_contract_main`` that ``amp_conformance.cli`` dispatches to.
The other memory formats that carry the AMP name are profiles with rule catalogues of their own
(``catalogues/*.json``): ``amr_lite.validate_amr_lite`` and ``memorycloud.validate_memorycloud``
(imported on use: they load detect-secrets, semver and license-expression).
"""

from __future__ import annotations

from amp_conformance.amp01.cells import Problem, validate_cell
from amp_conformance.validator.cli import validate_contract_main, validate_main
from amp_conformance.validator.contract import ContractDifference, compare_contract
from amp_conformance.validator.documents import validate_documents
from amp_conformance.validator.openapi import DocumentError, load_document
from amp_conformance.validator.report import Finding, InputError, Report

__all__ = [
    "ContractDifference",
    "DocumentError",
    "Finding",
    "InputError",
    "Problem",
    "Report",
    "compare_contract",
    "load_document",
    "validate_cell",
    "validate_contract_main",
    "validate_documents",
    "validate_main",
]
