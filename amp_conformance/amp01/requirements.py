"""AMP v0.1.0's catalogue: the packaged extract of requirements.md and the reader that makes it.

The source of truth is ``requirements.md`` (the spec folder); the package ships
``contract/requirements.json`` (made by ``scripts/build_catalogue.py``, kept in step by a test), so an
installed suite knows the catalogue without the spec folder. Its areas and their friendly names for
``--only`` are part of that file.
"""

from __future__ import annotations

import re
from functools import cache

from amp_conformance.engine.catalogue import Catalogue, Requirement, load_catalogue
from amp_conformance.engine.vocabulary import Level

_HEADING = re.compile(r"^\*\*(AMP-[A-Z]+-\d{2})\*\*\s*(?:\([^)]*\)\s*)?(.*)$")
_LEVEL = re.compile(r"^- Level:\s*(.*)$")


@cache
def catalogue() -> Catalogue:
    """The packaged AMP v0.1.0 catalogue."""
    return load_catalogue("amp_conformance.amp01")


def _normalise_level(text: str) -> Level:
    """The strongest RFC 2119 word at the start of a Level line ("MUST NOT" counts as MUST)."""
    for word in Level:
        if text.startswith(word) or text.startswith(f"MAY / {word}"):
            return word
    upper = text.upper()
    for word in Level:
        if word in upper:
            return word
    raise ValueError(f"no level in {text!r}")


def parse_requirements_markdown(text: str) -> list[Requirement]:
    """Read ``**AMP-AREA-NN** title`` headings and the ``- Level:`` line that follows each."""
    found: list[Requirement] = []
    pending: tuple[str, str] | None = None
    for line in text.splitlines():
        heading = _HEADING.match(line.strip())
        if heading:
            pending = (heading.group(1), heading.group(2).strip())
            continue
        level = _LEVEL.match(line.strip())
        if level and pending:
            found.append(Requirement(pending[0], _normalise_level(level.group(1)), pending[1]))
            pending = None
    return found
