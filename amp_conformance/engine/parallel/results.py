"""What crosses from the workers to the controller (a check's result as plain data) and how the
controller folds what came back into one run, as a serial run would have made it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from amp_conformance.engine.exchange import Exchange, exchange_from_wire, exchange_to_wire
from amp_conformance.engine.parallel.roles import plain_nodeid
from amp_conformance.engine.registry import level_of
from amp_conformance.engine.replay import ReplayContext
from amp_conformance.engine.run import CheckResult, Run
from amp_conformance.engine.verdict import Finding, RootStep, resolve

# what crosses -------------------------------------------------------------------------------------


def result_to_wire(result: CheckResult, root_step: RootStep | None) -> dict[str, Any]:
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
        elif field.name == "warnings":
            value = [finding.as_report() for finding in value]
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, str):
            value = str(value)  # an Outcome or Level member as the plain string it stands for
        elif isinstance(value, Mapping):
            value = dict(value)
        data[field.name] = value
    data["nodeid"] = plain_nodeid(result.nodeid)
    data["root_step"] = root_step.as_wire() if root_step is not None else None
    return data


def result_from_wire(
    data: dict[str, Any], replay: ReplayContext | None
) -> tuple[CheckResult, RootStep | None]:
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
        elif field.name == "warnings":
            value = [Finding.from_report(entry) for entry in value]
        values[field.name] = value
    step = data.get("root_step")
    return CheckResult(**values), RootStep.from_wire(step) if isinstance(step, dict) else None


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


def fold_root_steps(run: Run, root_steps: Mapping[str, RootStep], order: list[str]) -> None:
    """Workers decide alone whether a broken step nobody asks about is theirs to report; a serial run
    lets only the first check (in collection order) report it and blocks the others under it
    (``verdict.resolve``)."""
    resolution = resolve(
        run.results, level_of, root_causes=run.root_causes, root_steps=root_steps, order=order
    )
    run.results, run.root_causes = resolution.results, resolution.root_causes


def in_collection_order(run: Run, order: list[str]) -> None:
    """Put the merged results in the order a serial run would have produced them."""
    position = {nodeid: index for index, nodeid in enumerate(order)}
    ranked = sorted(run.results.items(), key=lambda item: position.get(item[0], len(position)))
    run.results = dict(ranked)
