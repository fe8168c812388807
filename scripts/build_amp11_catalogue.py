"""Render the AMP v1.1 files derived from the package's contract sources.

- docs/amp11-requirements.md from amp_conformance/amp11/contract/requirements.json;
- amp_conformance/amp11/contract/openapi.json (the REST channel) from contract/verbs.schema.json.

    python scripts/build_amp11_catalogue.py          # rewrite both
    python scripts/build_amp11_catalogue.py --check  # exit 1 while either is stale
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from amp_conformance.amp11.catalogue import render_markdown
from amp_conformance.amp11.openapi import openapi_document

ROOT = Path(__file__).resolve().parents[1]


def _openapi_text() -> str:
    return json.dumps(openapi_document(), indent=1, ensure_ascii=False) + "\n"


OUTPUTS: dict[Path, Callable[[], str]] = {
    ROOT / "docs" / "amp11-requirements.md": render_markdown,
    ROOT / "amp_conformance" / "amp11" / "contract" / "openapi.json": _openapi_text,
}


def main(argv: list[str]) -> int:
    stale = []
    for path, render in OUTPUTS.items():
        text = render()
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current == text:
            continue
        if "--check" in argv:
            stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"{path.name} written")
    if stale:
        print(f"stale: {', '.join(stale)}; run python scripts/build_amp11_catalogue.py")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
