"""What the network did during a run, kept apart from the verdict.

Broken exchanges (a reset, a cut body, a timeout, a refused connection), the attempts sent again, the
ambiguous writes settled by reading back, and the checks re-run once from the start: the report's
``network`` block says all of it, and none of it is ever a finding against the server.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

#: The kinds of broken exchange, in the order the report lists them.
BROKEN_KINDS = ("reset", "cut", "timeout", "refused")


class NetworkLog:
    """Thread-safe counters of one run's (or one worker's) network trouble."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.broken: dict[str, int] = dict.fromkeys(BROKEN_KINDS, 0)
        """Exchanges that got no complete response, by kind."""
        self.repeated = 0
        """Attempts sent again after a broken exchange (idempotent requests, or writes known absent)."""
        self.reconciled = 0
        """Ambiguous writes whose effect was settled by reading the server's state back."""
        self.rerun: list[str] = []
        """Checks re-run once from the start because a transport failure left their effect unknown."""
        self.unrecovered = 0
        """Broken exchanges no repeat, reconciliation or re-run recovered (each left a check errored)."""

    def count_broken(self, kind: str) -> None:
        with self._lock:
            self.broken[kind if kind in self.broken else "reset"] += 1

    def count_repeated(self) -> None:
        with self._lock:
            self.repeated += 1

    def count_reconciled(self) -> None:
        with self._lock:
            self.reconciled += 1

    def count_rerun(self, check_id: str) -> None:
        with self._lock:
            self.rerun.append(check_id)

    def count_unrecovered(self) -> None:
        with self._lock:
            self.unrecovered += 1

    @property
    def total_broken(self) -> int:
        return sum(self.broken.values())

    def as_block(self) -> dict[str, Any]:
        """The report's ``network`` block."""
        with self._lock:
            return {
                "exchanges_broken": sum(self.broken.values()),
                "broken_by_kind": dict(self.broken),
                "repeated": self.repeated,
                "reconciled": self.reconciled,
                "rerun": sorted(self.rerun),
                "unrecovered": self.unrecovered,
                "summary": summary_line(sum(self.broken.values()), self.unrecovered),
            }

    def merge(self, block: Mapping[str, Any]) -> None:
        """Add a worker's block (a parallel run's controller sums its workers')."""
        with self._lock:
            for kind, count in dict(block.get("broken_by_kind") or {}).items():
                self.broken[kind] = self.broken.get(kind, 0) + int(count)
            self.repeated += int(block.get("repeated", 0))
            self.reconciled += int(block.get("reconciled", 0))
            self.rerun.extend(str(name) for name in block.get("rerun") or ())
            self.unrecovered += int(block.get("unrecovered", 0))


def summary_line(broken: int, unrecovered: int) -> str:
    """``network: 27 exchanges broken, all recovered`` and its kin (the terminal's and the pages' line)."""
    if broken == 0:
        return "network: no exchange broken"
    noun = "exchange" if broken == 1 else "exchanges"
    if unrecovered == 0:
        return f"network: {broken} {noun} broken, all recovered"
    recovered = broken - unrecovered
    return f"network: {broken} {noun} broken, {recovered} recovered, {unrecovered} not (checks errored)"
