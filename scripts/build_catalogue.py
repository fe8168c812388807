"""Extract the requirement catalogue (id, level, title) from requirements.md into the package.

Run after requirements.md changes:
    python scripts/build_catalogue.py ../shared/spec/requirements.md
A project test fails while the packaged copy and the markdown disagree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from amp_conformance.engine.catalogue import parse_requirements_markdown

OUTPUT = Path(__file__).resolve().parents[1] / "amp_conformance" / "amp01" / "contract" / "requirements.json"


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else Path(__file__).resolve().parents[2] / "shared/spec/requirements.md"
    entries = parse_requirements_markdown(source.read_text(encoding="utf-8"))
    document = {"source": "requirements.md", "requirements": [entry.as_dict() for entry in entries]}
    OUTPUT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(entries)} requirements -> {OUTPUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
