"""What crosses from the workers to the controller (a check's result as plain data) and how the
controller folds what came back into one run, as a serial run would have made it."""

from __future__ import annotations

import dataclasses
from typing import Any

from amp_conformance.engine.exchange import Exchange, exchange_from_wire, exchange_to_wire
from amp_conformance.engine.outcomes import BLOCKED, WARN
from amp_conformance.engine.parallel.roles import plain_nodeid
from amp_conformance.engine.replay import ReplayContext
from amp_conformance.engine.run import CheckResult, Run

# what crosses -------------------------------------------------------------------------------------


def result_to_wire(result: CheckResult, root_step: dict[str, str] | None) -> dict[str, Any]:
    """A worker's check result as plain data (bytes, strings, numbers, lists and dicts), with the
    broken step it reported as its own failure (``root_step``), which the controller may fold into an
    earlier reporter, as a serial run would have."""
    data: dict[str, Any] = {}
    for field in dataclasses.fields(CheckResult):
        value = getattr(result, field.name)
        if field.name == "exchanges":
            value = [exchange_to_wire(e) for e in value]
        elif field.name == "failing_exchange":
            value = _index_of(result, value)
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, str):
            value = str(value)  # an Outcome or Level member as the plain string it stands for
        data[field.name] = value
    data["nodeid"] = plain_nodeid(result.nodeid)
    data["root_step"] = root_step
    return data


def result_from_wire(data: dict[str, Any], replay: ReplayContext | None) -> tuple[CheckResult, Any]:
    """The check result a worker sent, and its ``root_step``."""
    exchanges = [exchange_from_wire(e, replay) for e in data.get("exchanges", [])]
    values: dict[str, Any] = {}
    for field in dataclasses.fields(CheckResult):
        if field.name not in data:
            continue
        value = data[field.name]
        if field.name == "exchanges":
            value = exchanges
        elif field.name == "failing_exchange":
            value = _exchange_at(exchanges, value, replay)
        elif field.name in ("requirements", "finding_requirements"):
            value = tuple(value)
        values[field.name] = value
    return CheckResult(**values), data.get("root_step")


def _index_of(result: CheckResult, exchange: Exchange | None) -> int | dict[str, Any] | None:
    """The failing exchange as its place in the check's exchanges (or whole, when it is not there)."""
    if exchange is None:
        return None
    for index, candidate in enumerate(result.exchanges):
        if candidate is exchange:
            return index
    return exchange_to_wire(exchange)


def _exchange_at(
    exchanges: list[Exchange], value: int | dict[str, Any] | None, replay: ReplayContext | None
) -> Exchange | None:
    if isinstance(value, int):
        return exchanges[value] if 0 <= value < len(exchanges) else None
    if isinstance(value, dict):
        return exchange_from_wire(value, replay)
    return None


# merging ------------------------------------------------------------------------------------------


def merge_worker_output(run: Run, output: dict[str, Any], *, counted: int = 0) -> None:
    """Add one worker's counts (requests, cleanup) to the controller's run; ``counted``: its requests
    already added as its checks' results came in."""
    counts = output.get("amp")
    if not isinstance(counts, dict):
        return
    run.worker_requests += int(counts.get("requests", 0)) - counted
    run.worker_cleanup_requests += int(counts.get("cleanup_requests", 0))
    run.active_session.merge_worker_summary(counts)  # cleanup, and whether the server went away


def fold_root_steps(run: Run, root_steps: dict[str, dict[str, str]], order: list[str]) -> None:
    """Workers decide alone whether a broken step nobody asks about is theirs to report; a serial run
    lets only the first check (in collection order) report it and blocks the others under it."""
    reporter: dict[str, str] = {}
    for nodeid in order:
        step = root_steps.get(nodeid)
        result = run.results.get(nodeid)
        if step is None or result is None:
            continue
        requirement = step["requirement"]
        first = reporter.setdefault(requirement, nodeid)
        if first == nodeid:
            continue
        if result.outcome == WARN and result.warnings:
            result.warnings.pop(0)  # the finding it reported, now its root cause's
        result.outcome = BLOCKED
        result.blocked_by = {"requirement": requirement, "step": step["step"], "check": first}
        result.finding_requirements = ()
        result.level = step["level"]
        result.expected = None


def in_collection_order(run: Run, order: list[str]) -> None:
    """Put the merged results in the order a serial run would have produced them."""
    position = {nodeid: index for index, nodeid in enumerate(order)}
    ranked = sorted(run.results.items(), key=lambda item: position.get(item[0], len(position)))
    run.results = dict(ranked)
