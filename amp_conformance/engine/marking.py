"""``@check(...)``: how a test declares the requirements it verifies (a pytest mark), and how a mark
is read back as the check's :class:`~amp_conformance.engine.spec.CheckSpec` (``spec_of`` for a
collected item; the check registry, ``engine.check_registry``, reads the same marks without one).

A check's level is its catalogue's: the strongest level of the ids it cites. It is written only with a
``stance``, the documented reading that softens it (a requirements.md §2 conflict such as ``"C-23"``,
a Level line's own split, the draft tier of AMP v1.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import pytest

from amp_conformance.engine import registry
from amp_conformance.engine.catalogue import area_of
from amp_conformance.engine.spec import CheckSpec
from amp_conformance.engine.steps import Step
from amp_conformance.engine.vocabulary import LEVELS, Level

F = TypeVar("F", bound=Callable[..., Any])
MARK = "amp"


def check(
    *requirements: str,
    level: str | None = None,
    area: str | None = None,
    deadline: float | None = None,
    global_effects: bool = False,
    stance: str | None = None,
    serial: bool = False,
    scope: str | None = None,
    uses: Sequence[Step[Any, Any, Any]] = (),
    adopts: Sequence[Step[Any, Any, Any]] = (),
) -> pytest.MarkDecorator:
    """Mark a test as a conformance check of ``requirements`` (catalogue ids).

    ``level`` defaults to the catalogue's strongest level of the cited ids and may be written only
    together with ``stance``; findings about other ids take those ids' own levels. ``area`` defaults
    to the area of the first id; ``deadline`` overrides the run's per-check deadline for checks that
    must wait; ``global_effects`` marks checks that run store-wide operations (they need
    ``--allow-global-effects``); ``serial`` marks checks a concurrent store-wide operation could
    change; ``uses`` names the shared steps (:class:`~amp_conformance.engine.steps.Step`) the check
    reads: a parallel run keeps the checks sharing a step in one work unit, and each takes the steps'
    roles first; ``adopts`` names steps it reads that only another unit's checks make (a fallback
    source: it may wait for another worker's; no unit is joined); ``scope`` names a work unit of its
    own within the module (a split for speed, for checks that share no step: by default the module).
    """
    if not requirements:
        raise ValueError("a check cites at least one requirement id")
    unknown = [rid for rid in requirements if registry.requirement(rid) is None]
    if unknown:
        raise ValueError(f"@check cites ids no registered catalogue has: {', '.join(unknown)}")
    if not all(isinstance(step, Step) for step in (*uses, *adopts)):
        raise ValueError(f"@check{requirements}: uses= names declared shared steps (engine.steps.Step)")
    derived = registry.level_of(requirements)
    if level is not None:
        if level not in LEVELS:
            raise ValueError(f"level must be one of {tuple(LEVELS)}, got {level!r}")
        if stance is None and level != derived:
            raise ValueError(
                f"@check{requirements}: level {level} differs from the catalogue's {derived}: "
                "name the documented reading with stance=..."
            )
    return pytest.mark.amp(
        requirements=tuple(requirements),
        level=Level(level or derived),
        area=area or area_of(requirements[0]),
        deadline=deadline,
        global_effects=global_effects,
        stance=stance,
        serial=serial,
        scope=scope,
        uses=tuple(step.name for step in uses),
        adopts=tuple(step.name for step in adopts),
    )


def spec_from_mark(kwargs: Mapping[str, Any], title: str, name: str, nodeid: str) -> CheckSpec:
    """The check a ``@check`` mark's ``kwargs`` declare."""
    return CheckSpec(
        requirements=tuple(kwargs["requirements"]),
        level=Level(kwargs["level"]),
        area=kwargs["area"],
        title=title,
        name=name,
        nodeid=nodeid,
        deadline=kwargs.get("deadline"),
        global_effects=bool(kwargs.get("global_effects")),
        stance=kwargs.get("stance"),
        serial=bool(kwargs.get("serial")),
        scope=kwargs.get("scope"),
        uses=tuple(kwargs.get("uses") or ()),
        adopts=tuple(kwargs.get("adopts") or ()),
    )


def title_of(obj: object, fallback: str) -> str:
    """A check's title: its docstring's first line, else ``fallback``."""
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0].strip() if doc else fallback


def spec_of(item: pytest.Item) -> CheckSpec | None:
    """The check a collected item is, or None for a test that is not a check."""
    marker = item.get_closest_marker(MARK)
    if marker is None:
        return None
    title = title_of(getattr(item, "obj", None), item.name)
    return spec_from_mark(marker.kwargs, title, item.name, item.nodeid)
