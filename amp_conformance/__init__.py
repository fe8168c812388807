"""amp-conformance: the conformance suite and validator for the Agent Memory Protocol v0.1.0.

The public API is small: ``check`` and the levels for writing checks, ``Amp`` (the ``amp`` fixture's
type), and the resource helpers. The validator's API is re-exported once it is importable.
"""

from __future__ import annotations

from amp_conformance._version import __version__
from amp_conformance.catalogue import MAY, MUST, SHOULD
from amp_conformance.context import Amp
from amp_conformance.marking import check
from amp_conformance.resources import contract_path, fixtures_path, load_contract, load_fixture

__all__ = [
    "MAY",
    "MUST",
    "SHOULD",
    "Amp",
    "__version__",
    "check",
    "contract_path",
    "fixtures_path",
    "load_contract",
    "load_fixture",
]
