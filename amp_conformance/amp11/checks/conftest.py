"""Makes the ``amp11`` fixtures (and the ``amp`` marker) available to the checks in this folder."""

from amp_conformance.amp11.fixtures import amp11, amp11_session, pytest_configure

__all__ = ["amp11", "amp11_session", "pytest_configure"]
