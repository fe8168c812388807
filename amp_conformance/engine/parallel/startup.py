"""Starting a parallel run's workers: an interrupt held while they start, and the tiers of
scheduling priority they start at."""

from __future__ import annotations

import contextlib
import os

from amp_conformance.engine.check_registry import checks_of


def _read_registry(protocol_name: str) -> None:
    with contextlib.suppress(Exception):  # whoever needs it reads it again and reports what fails
        checks_of(protocol_name)


class _InterruptGate:
    """An interrupt that arrives while the workers' processes are being started waits until they all
    are: a worker interrupted between its start and the first line execnet sends it reads nothing
    and dies with a traceback of its own on the run's output. The command's signal handler asks
    :meth:`defer` before it raises."""

    def __init__(self) -> None:
        self._holding = False
        self._held: list[int] = []

    def defer(self, signum: int) -> bool:
        """Keep ``signum`` for :meth:`release` if the gate is holding (True), else leave it (False)."""
        if self._holding:
            self._held.append(signum)
        return self._holding

    def hold(self) -> None:
        """Start holding; a signal already held stays held (an outer holder's, until :meth:`release`)."""
        self._holding = True

    def release(self) -> None:
        """Stop holding; raise the interrupt that came meanwhile, if one did."""
        self._holding = False
        held, self._held = self._held, []
        if held:
            raise KeyboardInterrupt(f"signal {held[0]}")


INTERRUPT_GATE = _InterruptGate()


def usable_cores() -> int:
    """The cores this process may run on (its affinity, as a container or ``taskset`` limits it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        try:
            return max(1, len(affinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def start_niceness(index: int, workers: int, cores: int) -> int:
    """The scheduling niceness worker ``index`` (in start order) of ``workers`` starts at, on ``cores``.

    Starting a worker is ~1 CPU-second of imports and collection. Eight started at once on two cores
    share them evenly and are all ready only ~4 s later; work starts on the first ready (the
    scheduler below), so what matters is how soon the first ones are. Workers start in tiers of one per
    core: the first tier at the run's own priority, each later tier lower (up to 19, the lowest), so the
    first tier has the cores nearly to itself, then the next, and no core sits idle meanwhile. A worker
    mostly waits on the server once started, so the lower priority it keeps costs it little; with a
    core per worker every worker starts at 0."""
    tiers = -(-workers // cores)
    if tiers <= 1:
        return 0
    return min(19, round((index // cores) * 19 / (tiers - 1)))
