"""``@check(...)``: how a test declares the requirements it verifies, and :class:`CheckSpec`, what the
engine knows of a check (read from its mark, with or without a pytest collection).

A check's level is its catalogue's: the strongest level of the ids it cites. It is written only with a
``stance``, the documented reading that softens it (a requirements.md §2 conflict such as ``"C-23"``,
a Level line's own split, the draft tier of AMP v1.1).
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from types import ModuleType
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


def _spec(kwargs: Mapping[str, Any], title: str, name: str, nodeid: str) -> CheckSpec:
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


def _title(obj: object, fallback: str) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return doc.splitlines()[0].strip() if doc else fallback


def spec_of(item: pytest.Item) -> CheckSpec | None:
    """The check a collected item is, or None for a test that is not a check."""
    marker = item.get_closest_marker(MARK)
    if marker is None:
        return None
    return _spec(marker.kwargs, _title(getattr(item, "obj", None), item.name), item.name, item.nodeid)


# reading checks without a collection ---------------------------------------------------------------


def _marks(obj: object) -> list[pytest.Mark]:
    found = getattr(obj, "pytestmark", [])
    return list(found) if isinstance(found, list) else [found]


def _param_id(value: object, argname: str, index: int) -> str:
    """pytest's id for a parameter value without an explicit id (the simple kinds checks use)."""
    if isinstance(value, str) and value.isascii() and value.isprintable():
        return value
    if isinstance(value, bool | int | float) or value is None:
        return str(value)
    return f"{argname}{index}"


def _parameter_sets(mark: pytest.Mark) -> Iterator[tuple[str, list[pytest.Mark]]]:
    """Each parameter of a ``parametrize`` mark: its id and the marks it carries."""
    argnames = mark.args[0]
    first = argnames.split(",")[0].strip() if isinstance(argnames, str) else str(argnames[0])
    values: Sequence[Any] = mark.args[1]
    ids = mark.kwargs.get("ids")
    for index, value in enumerate(values):
        marks: list[pytest.Mark] = []
        explicit = None
        if hasattr(value, "values") and hasattr(value, "marks") and hasattr(value, "id"):  # pytest.param
            explicit = value.id
            marks = [getattr(m, "mark", m) for m in value.marks]
            value = value.values[0] if len(value.values) == 1 else value.values
        if explicit is None and ids is not None:
            explicit = ids[index]
        yield (str(explicit) if explicit is not None else _param_id(value, first, index)), marks


def specs_of_module(module: ModuleType) -> list[CheckSpec]:
    """The checks a module declares, parameters expanded as pytest would (ids joined by ``-``)."""
    path = module.__name__.rsplit(".", 1)[-1] + ".py"
    found: list[CheckSpec] = []
    for name, function in vars(module).items():
        if not name.startswith("test_") or not callable(function):
            continue
        marks = _marks(function)
        own = next((m for m in marks if m.name == MARK), None)
        title = _title(function, name)
        parametrized = [m for m in marks if m.name == "parametrize"]
        if not parametrized:
            if own is not None:
                found.append(_spec(own.kwargs, title, name, f"{path}::{name}"))
            continue
        # as pytest does: the ids in pytestmark's order, the last parametrization varying fastest
        choices = [list(_parameter_sets(mark)) for mark in parametrized]
        for ordered in itertools.product(*choices):
            param_id = "-".join(pid for pid, _ in ordered)
            param_marks = [m for _, marks_of in ordered for m in marks_of]
            mark = next((m for m in param_marks if m.name == MARK), own)
            if mark is not None:
                full = f"{name}[{param_id}]"
                found.append(_spec(mark.kwargs, title, full, f"{path}::{full}"))
    return found


#: One reading of the check registry at a time (the controller of a parallel run starts it in a thread).
_READING = threading.Lock()


def checks_of(protocol_name: str) -> tuple[CheckSpec, ...]:
    """Every check the protocol's checks package declares, in module and definition order, with its
    parameters expanded (node ids as a pytest collection rooted at the checks folder names them)."""
    with _READING:
        return _checks_of(protocol_name)


@cache
def _checks_of(protocol_name: str) -> tuple[CheckSpec, ...]:
    protocol = registry.get(protocol_name)
    package = importlib.import_module(protocol.checks_package)
    found: list[CheckSpec] = []
    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module_info.name.startswith("test_"):
            found += specs_of_module(importlib.import_module(f"{protocol.checks_package}.{module_info.name}"))
    return tuple(found)


def check_by_nodeid(protocol_name: str, nodeid: str) -> CheckSpec | None:
    """The check a node id (relative to the checks folder) names, or None."""
    return _by_nodeid(protocol_name).get(nodeid)


@cache
def _by_nodeid(protocol_name: str) -> dict[str, CheckSpec]:
    return {spec.nodeid: spec for spec in checks_of(protocol_name)}
