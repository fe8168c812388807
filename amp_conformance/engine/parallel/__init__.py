"""Parallel runs on pytest-xdist: which process is which, and what crosses between them.

The controller (the process the user started) checks nothing itself: it runs the preflight, settles
what every worker must agree on (the run id, the server's conventions) and hands it to each worker in
``workerinput``; each worker runs checks under its own namespace and cleans up its own cells; its
results come back on the test reports (``report.amp_result``, carried by pytest's own report
serialisation) and its counts in ``workeroutput``. The controller merges them into one :class:`Run`,
which every report renders exactly as a serial run's.

The package's modules: :mod:`.roles` (which process is which), :mod:`.results` (a check's result on the
wire, and the controller's folding of them), :mod:`.briefing` (what the workers start from),
:mod:`.startup` (starting the workers), :mod:`.units` (the work units and their costs),
:mod:`.scheduler` (xdist's public ``Scheduling`` protocol over them), :mod:`.controller` (the
controller's plugin). Their public names are importable from here.
"""

from __future__ import annotations

from amp_conformance.engine.parallel.briefing import (
    BRIEFING_PATH_KEY,
    DETAIL_PATH_KEY,
    Briefing,
    await_briefing,
)
from amp_conformance.engine.parallel.controller import Controller
from amp_conformance.engine.parallel.results import (
    fold_root_steps,
    in_collection_order,
    merge_worker_output,
    result_from_wire,
    result_to_wire,
)
from amp_conformance.engine.parallel.roles import (
    RESULT_ATTRIBUTE,
    is_controller,
    is_worker,
    plain_nodeid,
    worker_input,
    worker_output,
)
from amp_conformance.engine.parallel.scheduler import WorkUnitScheduling, make_scheduler
from amp_conformance.engine.parallel.startup import (
    INTERRUPT_GATE,
    _InterruptGate,
    start_niceness,
    usable_cores,
)
from amp_conformance.engine.parallel.units import (
    UNKNOWN_GROUP,
    check_cost_estimate,
    post_work_units,
    read_work_units,
    scope_finder,
    serial_check_finder,
    unit_cost_estimate,
)

__all__ = [
    "BRIEFING_PATH_KEY",
    "DETAIL_PATH_KEY",
    "INTERRUPT_GATE",
    "RESULT_ATTRIBUTE",
    "UNKNOWN_GROUP",
    "Briefing",
    "Controller",
    "WorkUnitScheduling",
    "_InterruptGate",
    "await_briefing",
    "check_cost_estimate",
    "fold_root_steps",
    "in_collection_order",
    "is_controller",
    "is_worker",
    "make_scheduler",
    "merge_worker_output",
    "plain_nodeid",
    "post_work_units",
    "read_work_units",
    "result_from_wire",
    "result_to_wire",
    "scope_finder",
    "serial_check_finder",
    "start_niceness",
    "unit_cost_estimate",
    "usable_cores",
    "worker_input",
    "worker_output",
]
