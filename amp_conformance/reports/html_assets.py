"""The page's inline stylesheet and script, and the Content-Security-Policy that admits only them.

The script only filters, copies and opens details: it never builds markup from page data (it reads
``data-*`` attributes and ``textContent`` and toggles ``hidden``), so escaped server text stays text.
"""

from __future__ import annotations

import base64
import hashlib
from importlib import resources

_ASSETS = resources.files("amp_conformance.reports") / "assets"
#: The page's stylesheet and script, read once from the package.
CSS = (_ASSETS / "report.css").read_text(encoding="utf-8")
JS = (_ASSETS / "report.js").read_text(encoding="utf-8")


def sha256_source(text: str) -> str:
    """The CSP source expression (``'sha256-...'``) that admits exactly this inline text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy(css: str, js: str | None) -> str:
    """Nothing may load; only this stylesheet and this script (if any) may run."""
    script = sha256_source(js) if js is not None else "'none'"
    return (
        f"default-src 'none'; style-src {sha256_source(css)}; script-src {script}; "
        "img-src 'none'; connect-src 'none'; font-src 'none'; base-uri 'none'; form-action 'none'"
    )
