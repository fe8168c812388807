"""Which process of a parallel run this is (controller or worker), and what xdist gives each."""

from __future__ import annotations

import re
from typing import Any

import pytest

#: What xdist appends to a node id grouped with ``xdist_group`` under ``--dist loadgroup``.
_GROUP_SUFFIX = re.compile(r"@[\w-]+$")
RESULT_ATTRIBUTE = "amp_result"


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def is_controller(config: pytest.Config) -> bool:
    """This process hands checks to xdist workers (``-n N`` with N > 0)."""
    if is_worker(config):
        return False
    return bool(getattr(config.option, "tx", None)) and getattr(config.option, "dist", "no") != "no"


def worker_input(config: pytest.Config) -> dict[str, Any]:
    value: dict[str, Any] = getattr(config, "workerinput", {})
    return value


def worker_output(config: pytest.Config) -> dict[str, Any] | None:
    value: dict[str, Any] | None = getattr(config, "workeroutput", None)
    return value


def plain_nodeid(nodeid: str) -> str:
    """The check's node id as a serial run names it: without the ``@group`` suffix xdist's workers add
    under ``--dist loadgroup`` to tests marked ``xdist_group`` (pytest before 9.2)."""
    return _GROUP_SUFFIX.sub("", nodeid) if "@" in nodeid.rsplit("]", 1)[-1] else nodeid
