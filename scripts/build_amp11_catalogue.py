"""Render docs/amp11-requirements.md from the AMP v1.1 catalogue JSON.

python scripts/build_amp11_catalogue.py          # rewrite the document
python scripts/build_amp11_catalogue.py --check  # exit 1 while the document is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

from amp_conformance.amp11.catalogue import render_markdown

OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "amp11-requirements.md"


def main(argv: list[str]) -> int:
    text = render_markdown()
    if "--check" in argv:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is stale; run python scripts/build_amp11_catalogue.py")
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"{OUTPUT.name} written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
