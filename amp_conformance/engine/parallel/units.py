"""The work units of a parallel run: which unit a check belongs to, what a unit and a check are
expected to cost, and a worker's reading of its units posted for the controller's scheduler."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Mapping

from amp_conformance.engine.check_registry import check_by_nodeid, checks_of
from amp_conformance.engine.parallel.roles import plain_nodeid
from amp_conformance.engine.protocol import AnyProtocol as Protocol
from amp_conformance.engine.spec import CheckSpec

#: Where a check the registry does not know runs: one at a time, beside nothing (slower, never wrong).
UNKNOWN_GROUP = "passes"


def scope_finder(protocol: Protocol) -> Callable[[str], str]:
    """The work unit a node id (relative to the checks folder) belongs to in a parallel run: its serial
    group (``serial:passes``...: the protocol's :meth:`~Protocol.serial_group` of the check), else the
    unit of the shared steps it declares (``@check(uses=...)``: ``step:<name>``, every check of any
    module linked to it through a step they use, so each step is made and used in the order a serial
    run does; a step it only ``adopts`` links nothing), else the ``scope`` its ``@check`` names, else
    its module: a module's checks make their shared values in the order a serial run does (units of
    one check were tried: a check that acts as another agent and then adopts a value another worker
    made with other roles is refused, and the counts vary with the schedule). Read from the check
    registry, without a collection. A node id the registry does not know goes to the first serial
    group: slower, never wrong."""
    step_units: dict[str, str] = {}

    def scope_of(nodeid: str) -> str:
        nodeid = plain_nodeid(nodeid)
        spec = check_by_nodeid(protocol.name, nodeid)
        if spec is None:
            return f"serial:{UNKNOWN_GROUP}"
        group = protocol.serial_group(spec)
        if group is not None:
            return f"serial:{group}"
        if spec.uses:
            if not step_units:  # the whole registry's steps, once a check declares one
                step_units.update(step_unit_names(checks_of(protocol.name), protocol.serial_group))
            return step_units[spec.uses[0]]
        path = nodeid.split("::", 1)[0]
        return f"{path}::{spec.scope}" if spec.scope else path

    return scope_of


def step_unit_names(
    specs: Iterable[CheckSpec], serial_group: Callable[[CheckSpec], str | None]
) -> dict[str, str]:
    """Each shared step's work unit: the steps one check (outside the serial groups) uses are one
    unit, named ``step:`` and the first of them in registry order."""
    parent: dict[str, str] = {}
    seen: dict[str, int] = {}

    def root(name: str) -> str:
        seen.setdefault(name, len(seen))
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    for spec in specs:
        if spec.uses and serial_group(spec) is None:
            for name in spec.uses[1:]:
                first, other = sorted((root(spec.uses[0]), root(name)), key=seen.__getitem__)
                parent[other] = first  # the step seen first in registry order names the unit
            root(spec.uses[0])
    return {name: f"step:{root(name)}" for name in parent}


def serial_check_finder(protocol: Protocol) -> Callable[[str], str | None]:
    """The serial group a node id's check runs in, or None."""
    scope_of = scope_finder(protocol)

    def group_of(nodeid: str) -> str | None:
        scope = scope_of(nodeid)
        return scope.removeprefix("serial:") if scope.startswith("serial:") else None

    return group_of


def unit_cost_estimate(measured: Mapping[str, float], checks: Mapping[str, int]) -> Callable[[str], float]:
    """A work unit's expected cost: its measured seconds (``Protocol.unit_costs``), else its checks
    times the measured seconds per check of the units that have a figure (one when none has).
    Scheduling the costliest first (longest-processing-time order) keeps the workers' ends close."""
    known = [unit for unit in checks if unit in measured]
    counted = sum(checks[unit] for unit in known)
    per_check = sum(measured[unit] for unit in known) / counted if counted else 1.0

    def cost(unit: str) -> float:
        return measured[unit] if unit in measured else checks.get(unit, 1) * per_check

    return cost


def check_cost_estimate(measured: Mapping[str, float]) -> Callable[[str], float]:
    """A check's expected seconds: its measured figure (``Protocol.check_costs``, by node id below the
    checks folder), else the mean of the measured ones (a tenth of a second when none is)."""
    mean = sum(measured.values()) / len(measured) if measured else 0.1

    def cost(nodeid: str) -> float:
        return measured.get(nodeid.split("/checks/", 1)[-1], mean)

    return cost


def post_work_units(folder: str, worker: str, nodeids: Iterable[str], protocol: Protocol) -> None:
    """A worker's reading of the work units of what it collected (:func:`scope_finder`), put beside
    the briefing for the controller's scheduler: the worker has the check modules imported already,
    while the controller may still be importing them to read its own registry."""
    scope_of = scope_finder(protocol)
    units = {nodeid: scope_of(nodeid) for nodeid in nodeids}
    path = os.path.join(folder, f"units-{worker}.json")
    with contextlib.suppress(OSError):  # the scheduler then reads the registry itself
        with open(f"{path}.part", "w", encoding="utf-8") as handle:
            json.dump(units, handle)
        os.replace(f"{path}.part", path)


def read_work_units(folder: str, worker: str) -> dict[str, str]:
    """What :func:`post_work_units` put there for ``worker`` (empty when nothing readable is)."""
    try:
        with open(os.path.join(folder, f"units-{worker}.json"), encoding="utf-8") as handle:
            units = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(units, dict):
        return {}
    return {str(nodeid): str(unit) for nodeid, unit in units.items()}
