"""``@check(...)``: how a test declares the requirements it verifies, their level and its area."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from amp_conformance.engine.catalogue import LEVELS, MUST, area_of

F = TypeVar("F", bound=Callable[..., Any])
MARK = "amp"
#: Areas whose checks share a clock or the whole store (rate windows, lifecycle passes, the admin route,
#: retention): in a parallel run they all run in the serial group.
SERIAL_AREAS = frozenset({"rate", "lc", "admin", "ret"})


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
    def in_serial_group(self) -> bool:
        """Runs in the serial group of a parallel run: one such check at a time, on one worker."""
        return self.global_effects or self.serial or self.area in SERIAL_AREAS


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
    must not overlap one another in a parallel run (time windows, decay clocks): both run in the serial
    group, one at a time on one worker.

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
