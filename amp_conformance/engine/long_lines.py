"""Reproduce lines too long for a terminal line: written whole to a file, the terminal names it.

A curl line cut with ``...`` is a shell syntax error when pasted (issue 38 item 17); a line over
:data:`TERMINAL_CHARS` is written to a file in :func:`folder` (named by its content, so a re-run
rewrites the same file) and the terminal shows ``bash PATH``, itself a command that runs it.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
import tempfile
from pathlib import Path

#: The longest reproduce line shown as it is in the terminal summary.
TERMINAL_CHARS = 400


def folder() -> Path:
    """Where long lines are written: this user's own folder under the system's temporary directory
    (made private; one another user made or can write is refused: the terminal says ``bash PATH``)."""
    path = Path(tempfile.gettempdir()) / f"amp-conformance-reproduce-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    status = path.lstat()
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid() or status.st_mode & 0o022:
        raise OSError(f"{path} is not this user's private folder")
    return path


def terminal_line(line: str, limit: int = TERMINAL_CHARS) -> str:
    """``line`` itself when it fits in ``limit`` characters, else ``bash PATH`` of a file holding it
    whole (the cut line, when the file cannot be written, says so rather than being pasted)."""
    if len(line) <= limit and "\n" not in line:
        return line
    name = f"{hashlib.sha256(line.encode('utf-8')).hexdigest()[:16]}.sh"
    try:
        path = folder() / name
        path.write_text(line + "\n", encoding="utf-8")
    except OSError as exc:
        return f"(a {len(line)}-character line; it cannot be written to a file: {exc.strerror or exc})"
    return f"bash {shlex.quote(str(path))}  # the whole {len(line)}-character line"
