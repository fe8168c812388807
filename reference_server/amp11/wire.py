"""JSON as both channels read it: strict (no NaN or Infinity, which no JSON client can read back) and
never crashing on absurd nesting; every failure is a ``ValueError``."""

from __future__ import annotations

import json
from typing import Any


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str | bytes) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constants)
    except RecursionError:
        raise ValueError("the JSON nests too deeply") from None
