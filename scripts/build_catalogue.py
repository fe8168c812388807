"""Extract the requirement catalogue (id, level, title) from requirements.md into the package.

Run after requirements.md changes:
    python scripts/build_catalogue.py ../shared/spec/requirements.md
The file's other members (protocol, prefix, areas and their aliases) are kept as they are. A project
test fails while the packaged copy and the markdown disagree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from amp_conformance.amp01.requirements import parse_requirements_markdown

OUTPUT = Path(__file__).resolve().parents[1] / "amp_conformance" / "amp01" / "contract" / "requirements.json"


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else Path(__file__).resolve().parents[2] / "shared/spec/requirements.md"
    entries = parse_requirements_markdown(source.read_text(encoding="utf-8"))
    document = json.loads(OUTPUT.read_text(encoding="utf-8"))
    document["requirements"] = [
        {"id": entry.id, "level": str(entry.level), "title": entry.title} for entry in entries
    ]
    OUTPUT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(entries)} requirements -> {OUTPUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
