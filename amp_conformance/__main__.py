"""``python -m amp_conformance`` is the ``amp-conformance`` command."""

from amp_conformance._command import entry

entry()
