"""The typed words every part of a run shares: outcomes, requirement levels.

They are ``StrEnum`` members, so they compare equal to (and serialise as) the plain strings the JSON
report has always carried: ``Outcome.PASS == "pass"``.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """How one check ended. ``blocked``: a step it depends on broke (the step's requirement is the root
    cause, reported once by the check that asks about it); ``error``: the tool or the network failed."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"
    ERROR = "error"
    BLOCKED = "blocked"


class Level(StrEnum):
    """RFC 2119 levels, strongest first (the order :data:`LEVELS` keeps)."""

    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"


OUTCOMES: tuple[Outcome, ...] = tuple(Outcome)
LEVELS: tuple[Level, ...] = tuple(Level)
