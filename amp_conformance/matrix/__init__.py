"""``amp-conformance matrix``: one page for a whole ecosystem (docs/matrix.md).

``config`` reads the implementations file, ``running`` runs one ordinary suite process per
implementation, ``report`` builds the matrix report (``contract/matrix.schema.json``), ``html`` the
page, ``diff``/``diff_cli``/``html_diff`` compare two matrices, ``site`` writes badges and a site, and
``cli`` is the subcommand (``matrix_main``).
"""

from __future__ import annotations

from amp_conformance.matrix.cli import matrix_main

__all__ = ["matrix_main"]
