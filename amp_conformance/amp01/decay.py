"""The AMP decay score and the status a lifecycle pass gives a cell (requirements.md §3).

``decay_score = importance × confidence × exp(−decay_rate × Δt_days)``, where ``Δt_days`` is the time
since ``last_accessed_at`` (or ``created_at`` if the cell was never read), in seconds ÷ 86 400.

At a pass: ``active`` below 0.3 → ``stale``; ``stale`` at 0.3 or above → ``active``; ``stale``, still
below 0.3 and at least 30 days since the last update → ``archived``. Equality (0.3) is *not* below
the threshold (C-33, example E). Kept pure and dependency-free so the validator, the online checks
and the reference server's tests all compute the same number.
"""

from __future__ import annotations

import math
from typing import Final

STALE_THRESHOLD: Final = 0.3
"""A score strictly below this makes an ``active`` cell ``stale`` at the next pass."""

ARCHIVE_AFTER_DAYS: Final = 30.0
"""Days without an update after which a ``stale`` cell still below threshold is archived."""

SECONDS_PER_DAY: Final = 86_400.0


def decay_score(importance: float, confidence: float, decay_rate: float, delta_days: float) -> float:
    """``importance × confidence × exp(−decay_rate × delta_days)``.

    Raises ``ValueError`` for inputs the protocol cannot produce (non-finite numbers, scores outside
    [0, 1], a negative rate or a negative elapsed time), so a bad cell never yields a plausible score.
    """
    for name, value in (("importance", importance), ("confidence", confidence)):
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be a finite number in [0, 1], got {value!r}")
    if not math.isfinite(decay_rate) or decay_rate < 0.0:
        raise ValueError(f"decay_rate must be a finite number >= 0, got {decay_rate!r}")
    if not math.isfinite(delta_days) or delta_days < 0.0:
        raise ValueError(f"elapsed time must be a finite number of days >= 0, got {delta_days!r}")
    return importance * confidence * math.exp(-decay_rate * delta_days)


def is_below_threshold(score: float) -> bool:
    """True when ``score`` makes a cell stale; 0.3 itself is not below (C-33)."""
    return score < STALE_THRESHOLD


def status_at_pass(status: str, score: float, days_since_update: float = 0.0) -> str:
    """The status one lifecycle pass gives a cell now in ``status`` with decay ``score``.

    ``days_since_update`` is the time since ``last_updated_at`` (else ``created_at``); it only
    matters for ``stale`` → ``archived``. ``archived`` and ``deleted`` cells are left alone.
    """
    if status == "active":
        return "stale" if is_below_threshold(score) else "active"
    if status == "stale":
        if not is_below_threshold(score):
            return "active"
        return "archived" if days_since_update >= ARCHIVE_AFTER_DAYS else "stale"
    return status


def days_to_threshold(importance: float, confidence: float, decay_rate: float) -> float:
    """Days until a fresh cell's score falls below the threshold: ``ln(i × c / 0.3) / rate``.

    0 when the cell starts below the threshold; ``math.inf`` when it never decays below it.
    """
    start = importance * confidence
    if is_below_threshold(start):
        return 0.0
    if decay_rate == 0.0:
        return math.inf
    return math.log(start / STALE_THRESHOLD) / decay_rate
