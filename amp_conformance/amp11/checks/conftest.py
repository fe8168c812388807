"""The ``amp11`` fixture: the engine's check context (``amp``) of an AMP v1.1 run, by its protocol's name."""

import pytest

from amp_conformance.amp11.context import Amp11


@pytest.fixture
def amp11(amp: Amp11) -> Amp11:
    """The per-check API of the AMP v1.1 checks (see ``amp_conformance.amp11.context.Amp11``)."""
    return amp
