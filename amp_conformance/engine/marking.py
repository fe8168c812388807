"""``@check(...)``: how a test declares the requirements it verifies, their level and its area."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from amp_conformance.engine.catalogue import LEVELS, MUST, area_of

F = TypeVar("F", bound=Callable[..., Any])
MARK = "amp"
#: Areas whose checks run store-wide lifecycle passes or depend on where a pass leaves cells (the admin
#: route, lifecycle, retention): in a parallel run they run in the serial group of passes.
PASS_AREAS = frozenset({"lc", "admin", "ret"})
#: Areas whose checks work to the scoring-PATCH rate window: the serial group of rate windows. A budget
#: belongs to one cell (AMP-RATE-07), so the two groups may run beside each other.
RATE_AREAS = frozenset({"rate"})
PASSES, RATE_WINDOWS = "passes", "rate-windows"


def serial_group_of(*, area: str, global_effects: bool = False, serial: bool = False) -> str | None:
    """The serial group a check runs in during a parallel run (one check of a group at a time, on one
    worker), or None: ``passes`` for checks with store-wide effects (``global_effects``), checks a
    concurrent pass could change (``serial``) and the lifecycle areas; ``rate-windows`` for rate checks."""
    if global_effects or serial or area in PASS_AREAS:
        return PASSES
    if area in RATE_AREAS:
        return RATE_WINDOWS
    return None


@dataclass(frozen=True)
class CheckInfo:
    requirements: tuple[str, ...]
    level: str
    area: str
    title: str
    deadline: float | None = None
    global_effects: bool = False
    stance: str | None = None
    serial: bool = False

    @property
    def serial_group(self) -> str | None:
        """The serial group it runs in during a parallel run (:func:`serial_group_of`), if any."""
        return serial_group_of(area=self.area, global_effects=self.global_effects, serial=self.serial)


def check(
    *requirements: str,
    level: str = MUST,
    area: str | None = None,
    deadline: float | None = None,
    global_effects: bool = False,
    stance: str | None = None,
    serial: bool = False,
) -> Callable[[F], F]:
    """Mark a test as a conformance check of ``requirements`` (AMP-AREA-NN ids) at ``level``.

    ``area`` defaults to the area of the first id; ``deadline`` overrides the run's per-check deadline
    for checks that must wait (decay, rate windows); ``global_effects`` marks checks that run
    store-wide operations and therefore need ``--allow-global-effects``; ``serial`` marks checks that
    a concurrent lifecycle pass could change: in a parallel run both run in the serial group of passes
    (:func:`serial_group_of`), one at a time on one worker.

    ``level`` is the catalogue's (the strongest level of the cited ids, a project test keeps them
    equal) unless ``stance`` names the requirements.md §2 conflict (``"C-23"``) that documents a
    softer reading; findings about other ids take those ids' own catalogue levels.
    """
    if not requirements:
        raise ValueError("a check cites at least one requirement id")
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    return pytest.mark.amp(
        requirements=tuple(requirements),
        level=level,
        area=area or area_of(requirements[0]),
        deadline=deadline,
        global_effects=global_effects,
        stance=stance,
        serial=serial,
    )


def check_info(item: pytest.Item) -> CheckInfo | None:
    """The check metadata of a collected item, or None for a test that is not a check."""
    marker = item.get_closest_marker(MARK)
    if marker is None:
        return None
    kwargs = marker.kwargs
    obj = getattr(item, "obj", None)
    doc = (getattr(obj, "__doc__", None) or "").strip()
    title = doc.splitlines()[0].strip() if doc else item.name
    return CheckInfo(
        requirements=tuple(kwargs["requirements"]),
        level=kwargs["level"],
        area=kwargs["area"],
        title=title,
        deadline=kwargs.get("deadline"),
        global_effects=bool(kwargs.get("global_effects")),
        stance=kwargs.get("stance"),
        serial=bool(kwargs.get("serial")),
    )
