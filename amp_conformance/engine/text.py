"""Text helpers for messages and terminal output, shared by every protocol and report.

CONTRIBUTING's rule for check messages: a finding names values in their JSON spelling (``null``,
``true``, ``"text"``), never Python reprs (``None``, ``True``, ``'text'``), since the reader knows the
protocol, not the suite's language. Text that came from a server is made printable before it reaches
a terminal, so a hostile reply cannot move the cursor or recolour the screen.
"""

from __future__ import annotations

import json
import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def shown(value: Any) -> str:
    """``value`` as a message shows it: its JSON spelling, or ``str`` for what JSON cannot spell."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def printable(text: str) -> str:
    """Server output made safe for a terminal or a report: control characters shown as escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
