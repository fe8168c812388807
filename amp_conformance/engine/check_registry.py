"""The check registry: every check a protocol's checks package declares, read from the modules'
``@check`` marks without a pytest collection (``--list``, coverage, the parallel scheduler)."""

from __future__ import annotations

import importlib
import itertools
import pkgutil
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import cache
from types import ModuleType
from typing import Any

import pytest

from amp_conformance.engine import registry
from amp_conformance.engine.marking import MARK, spec_from_mark, title_of
from amp_conformance.engine.spec import CheckSpec
from amp_conformance.engine.tiers import tier_marks


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
        title = title_of(function, name)
        parametrized = [m for m in marks if m.name == "parametrize"]
        if not parametrized:
            if own is not None:
                spec = spec_from_mark(own.kwargs, title, name, f"{path}::{name}")
                found.append(replace(spec, tiers=tier_marks(m.name for m in marks)))
            continue
        # as pytest does: the ids in pytestmark's order, the last parametrization varying fastest
        choices = [list(_parameter_sets(mark)) for mark in parametrized]
        for ordered in itertools.product(*choices):
            param_id = "-".join(pid for pid, _ in ordered)
            param_marks = [m for _, marks_of in ordered for m in marks_of]
            mark = next((m for m in param_marks if m.name == MARK), own)
            if mark is not None:
                full = f"{name}[{param_id}]"
                spec = spec_from_mark(mark.kwargs, title, full, f"{path}::{full}")
                found.append(replace(spec, tiers=tier_marks(m.name for m in (*marks, *param_marks))))
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
