"""amp-conformance: the conformance suite and validator for the Agent Memory Protocol v0.1.0.

The public API is small: ``check`` and the levels for writing checks, ``Amp01Context`` and
``Amp11Context`` (the ``amp`` fixture's type in each protocol's checks), the offline validator
(``validate_cell``, ``validate_documents``, ``compare_contract``), and the resource helpers. Every
name loads on first use: the pytest plugin imports this package in every pytest run on the machine,
so importing it must stay cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from amp_conformance._version import __version__

if TYPE_CHECKING:
    from amp_conformance.amp01.cells import Problem, validate_cell
    from amp_conformance.amp01.context import Amp01Context
    from amp_conformance.amp11.context import Amp11Context
    from amp_conformance.engine.catalogue import MAY, MUST, SHOULD
    from amp_conformance.engine.marking import check
    from amp_conformance.engine.resources import contract_path, fixtures_path, load_contract, load_fixture
    from amp_conformance.validator import ContractDifference, Report, compare_contract, validate_documents

#: Every public name loads on first use: the pytest plugin and the command import this package first
#: (the command starts a parallel run's fork server before anything heavy, ``amp_conformance._command``).
_LAZY = {
    "Amp01Context": "amp_conformance.amp01.context",
    "Amp11Context": "amp_conformance.amp11.context",
    "MAY": "amp_conformance.engine.catalogue",
    "MUST": "amp_conformance.engine.catalogue",
    "SHOULD": "amp_conformance.engine.catalogue",
    "check": "amp_conformance.engine.marking",
    "contract_path": "amp_conformance.engine.resources",
    "fixtures_path": "amp_conformance.engine.resources",
    "load_contract": "amp_conformance.engine.resources",
    "load_fixture": "amp_conformance.engine.resources",
    "Problem": "amp_conformance.amp01.cells",
    "validate_cell": "amp_conformance.amp01.cells",
    "ContractDifference": "amp_conformance.validator",
    "Report": "amp_conformance.validator",
    "compare_contract": "amp_conformance.validator",
    "validate_documents": "amp_conformance.validator",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'amp_conformance' has no attribute {name!r}")


__all__ = [
    "MAY",
    "MUST",
    "SHOULD",
    "Amp01Context",
    "Amp11Context",
    "ContractDifference",
    "Problem",
    "Report",
    "__version__",
    "check",
    "compare_contract",
    "contract_path",
    "fixtures_path",
    "load_contract",
    "load_fixture",
    "validate_cell",
    "validate_documents",
]
