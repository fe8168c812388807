"""Writing one rendered report to its file: the reason in one line when it cannot be written (the
run reports it; a report path is no reason for a traceback)."""

from __future__ import annotations

from pathlib import Path


def write_report_file(path: Path, text: str, what: str, *, append: bool = False) -> str | None:
    """Write ``text`` to ``path`` (its folder made when missing); None, or why ``what`` (e.g. "the
    JUnit report") could not be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a" if append else "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        return f"cannot write {what} {path}: {exc.strerror or exc}"
    return None
