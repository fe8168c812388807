"""Run tiers (``--tier``): which checks a run takes, chosen by pytest marks on the checks.

``smoke`` runs the checks marked ``smoke``: one probe per requirement where one probe tells, a few
hundred requests at most, for every pull request. ``full`` (the default) runs every check but those
marked ``stress``; ``stress`` runs them all, the store-growing checks too. The marks are plain pytest
marks, so ``pytest -m smoke`` with the plugin selects the same checks.
"""

from __future__ import annotations

from collections.abc import Iterable

SMOKE = "smoke"
FULL = "full"
STRESS = "stress"
TIERS = (SMOKE, FULL, STRESS)
DEFAULT_TIER = FULL

#: The marks the plugin registers, with the line ``pytest --markers`` shows.
MARKS = {
    SMOKE: "a check of the smoke tier (--tier smoke, -m smoke): one probe per requirement, for pull requests",
    STRESS: "a check of the stress tier only (--tier stress): it grows the store to hundreds of cells",
}


def tier_marks(names: Iterable[str]) -> tuple[str, ...]:
    """The tier marks among a check's mark names, in :data:`TIERS` order."""
    found = set(names)
    return tuple(mark for mark in TIERS if mark in found and mark in MARKS)


def in_tier(tier: str, marks: Iterable[str]) -> bool:
    """Whether a check carrying ``marks`` (its mark names) runs in ``tier``."""
    names = set(marks)
    if tier == SMOKE:
        return SMOKE in names
    if tier == FULL:
        return STRESS not in names
    return True


def verdict_suffix(tier: str) -> str:
    """What a verdict line adds for a tier other than the default (``PASS (smoke tier)``): a smoke pass
    is not a full pass."""
    return "" if tier == DEFAULT_TIER else f" ({tier} tier)"
