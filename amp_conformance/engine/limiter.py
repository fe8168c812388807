"""How many requests the run has in flight to its server at once: a limit that adapts to the server.

A server that serves one request at a time answers the eleventh of eleven sent together after ten
service times: sent blindly, it times out although the server is healthy. So every attempt first waits
for a slot of an :class:`AdaptiveLimiter` (``Connection._receive``), and its timeout starts only once it
holds one: a request queued behind the suite's own is never timed out for the queue.

The limit is AIMD, as TCP's congestion window and Netflix's ``concurrency-limits`` (AIMD, Gradient):

- it starts at :data:`INITIAL` and, in *slow start*, grows by one per answer whose latency stayed
  flat (under :data:`CONCURRENT` x the floor + :data:`SLACK`): it doubles per round trip; after the
  first cut, by ``1/limit`` per answer (one per round trip). It grows only when the budget was in use
  (at least half the limit in flight), as a TCP window grows only when it limits the sender: a run
  sending one request at a time says nothing about the server at twelve.
- it halves on a timeout or a latency jump: an answer slower than :data:`JUMP` times the fastest seen
  (the *floor*) plus :data:`SLACK` seconds (so local jitter of a few ms never counts). One cut per
  round trip: answers to requests sent before the last cut do not cut again (TCP's recovery).
- a server that serialises is recognised by its latency growing with the requests ahead of it (about
  ``in_flight x floor``) while its answers come one service time apart (a stall that answers all at
  once is a jump, not a serialising server): :data:`SERIAL_AFTER` such answers, net of answers that
  look concurrent, pin the limit at one. Every :data:`PROBE_AFTER` answers it lets two go at once:
  served concurrently, the pin goes; else it stays.

``--max-in-flight N`` caps the limit (default :data:`DEFAULT_CAP`). The limit lives in this process
(threads of one run), or in a small file shared by every process of a parallel run
(:meth:`AdaptiveLimiter.shared`, ``fcntl.flock``-guarded), so a parallel run has one budget per target.
Requests that must wait take a ticket and are served first come, first served: a new request never
overtakes them (a worker sending one request after another would otherwise keep the slots from
another process's waiters, which look every few ms).
The clock is injectable: the arithmetic is tested without waiting. Limits: the floor is the fastest
answer of any route, so a server whose writes are much slower than its reads looks congested on
writes and gets a low limit (slower, never wrong).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import math
import mmap
import os
import struct
import threading
import time
from collections.abc import Callable, Iterator

from amp_conformance.engine.outcomes import DeadlineExceeded

#: The limit a run starts with.
INITIAL = 4
#: The largest limit when ``--max-in-flight`` is not given.
DEFAULT_CAP = 64
#: A latency above ``JUMP x floor + SLACK`` is a jump: the server is queueing.
JUMP = 2.0
#: Seconds of latency that never count as a jump or as queueing (local jitter).
SLACK = 0.05
#: An answer looks serialised when its latency is at least this share of ``in_flight x floor``.
SERIAL_SHARE = 0.8
#: An answer looks concurrent when its latency is under ``CONCURRENT x floor + SLACK``.
CONCURRENT = 1.5
#: Serialised-looking answers (net of concurrent-looking ones) that pin the limit at one.
SERIAL_AFTER = 3
#: Answers at a pinned limit of one before two are let go at once again, to see if that still holds.
PROBE_AFTER = 50
#: Seconds between a waiting request's looks at a shared budget (other processes release there): the
#: first pause, doubled up to the last (a waiter costs a lock and a read of 100 bytes a look).
POLL = (0.002, 0.01)
#: Seconds a request waits before it checks whether a process holding slots of a shared budget died.
RECLAIM_AFTER = 1.0
#: Seconds after which a waiter takes any free slot, its turn or not (a waiter that died without
#: leaving the queue cannot hold it for longer).
LATE_AFTER = 5.0


@dataclasses.dataclass
class _State:
    """The budget (one struct: the shared file holds it as :data:`_LAYOUT`)."""

    limit: float = float(INITIAL)
    in_flight: int = 0
    floor: float = math.inf
    """The fastest answer seen, in seconds."""
    slow_start: bool = True
    serial: bool = False
    """Pinned at one: the server serialises."""
    serial_score: int = 0
    calm: int = 0
    """Answers since the pin (or the last probe)."""
    seq: int = 0
    """Slots handed out so far."""
    cut_seq: int = 0
    """``seq`` at the last cut: answers to slots up to it cut no more."""
    cap: int = DEFAULT_CAP
    last_answer: float = 0.0
    """When the last answer came (the clock's time)."""
    tickets: int = 0
    """Tickets handed to requests that had to wait (a queue: a process sending one request after
    another would otherwise keep the slots from another process's waiters, which look every few ms)."""
    served: int = 0
    """Tickets that left the queue (with a slot, or out of time): ``tickets - served`` wait."""

    @property
    def allowed(self) -> int:
        return max(1, min(self.cap, int(self.limit)))


_LAYOUT = struct.Struct("<dqd??qqqqqdqq")
_FIELDS = [field.name for field in dataclasses.fields(_State)]
#: Entries of the shared file's table of slots held per process (to take back a dead process's).
_HOLDERS = 256
_HOLDER = struct.Struct("<qq")


class Slot:
    """One request's right to be in flight; :meth:`done` (exactly once) gives it back."""

    __slots__ = ("_limiter", "at_start", "released", "seq", "started")

    def __init__(self, limiter: AdaptiveLimiter, seq: int, at_start: int, started: float) -> None:
        self._limiter = limiter
        self.seq = seq
        self.at_start = at_start
        """Requests in flight when this one got its slot (itself included)."""
        self.started = started
        self.released = False

    def done(self, *, answered: bool = True, timed_out: bool = False) -> None:
        """Give the slot back: ``answered`` (its latency is a sample), ``timed_out`` (a cut), or neither
        (a reset, a refused connection, an interrupt: no sign of the server's load)."""
        if not self.released:
            self.released = True
            self._limiter._release(self, answered=answered, timed_out=timed_out)


class AdaptiveLimiter:
    """The run's budget of requests in flight to one target (see the module's docstring)."""

    def __init__(
        self,
        *,
        cap: int | None = None,
        initial: int = INITIAL,
        clock: Callable[[], float] = time.monotonic,
        path: str | None = None,
    ) -> None:
        self.clock = clock
        self.path = path
        """The shared file, when the budget is shared between processes."""
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._state = _State(limit=float(max(1, initial)), cap=max(1, cap or DEFAULT_CAP))
        self._fd: int | None = None
        self._map: mmap.mmap | None = None
        self._pid = 0
        self._holder: int | None = None
        if path is not None:
            self._open()

    @classmethod
    def shared(cls, path: str, *, cap: int | None = None, initial: int = INITIAL) -> AdaptiveLimiter:
        """A budget shared by every process that opens ``path``: made there now (the controller of a
        parallel run), then opened by each worker with :meth:`join`."""
        state = _State(limit=float(max(1, initial)), cap=max(1, cap or DEFAULT_CAP))
        with open(path, "wb") as handle:
            handle.write(_pack(state) + bytes(_HOLDER.size * _HOLDERS))
        return cls(path=path, cap=cap)

    @classmethod
    def join(cls, path: str) -> AdaptiveLimiter:
        """A worker's handle on the budget the controller made at ``path``."""
        return cls(path=path)

    # -- the state ---------------------------------------------------------------------------------

    def _open(self) -> None:
        assert self.path is not None
        self._fd = os.open(self.path, os.O_RDWR)
        self._map = mmap.mmap(self._fd, _LAYOUT.size + _HOLDER.size * _HOLDERS)
        self._pid = os.getpid()
        self._holder = None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[_State]:
        """The state, read and written under the budget's lock (a shared one: also ``flock``)."""
        if self.path is None:
            yield self._state
            return
        assert self._fd is not None and self._map is not None
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            state = _unpack(self._map)
            before = state.in_flight
            yield state
            _LAYOUT.pack_into(self._map, 0, *_values(state))
            if state.in_flight != before:
                self._note_held(state.in_flight - before)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _forked(self) -> None:
        """In a forked child: its own open file (a file description shared with the parent would let
        both hold the ``flock`` at once) and its own thread locks (another thread may have held them)."""
        if self.path is not None and self._pid != os.getpid():
            self._lock = threading.Lock()
            self._freed = threading.Condition(self._lock)
            self._open()

    def _note_held(self, change: int) -> None:
        """This process's slots in the shared file's table (under the lock)."""
        assert self._map is not None
        if self._holder is None:
            for index in range(_HOLDERS):
                pid, held = _HOLDER.unpack_from(self._map, _LAYOUT.size + index * _HOLDER.size)
                if pid in (0, self._pid) or (held == 0 and not _alive(pid)):
                    self._holder = index
                    _HOLDER.pack_into(self._map, _LAYOUT.size + index * _HOLDER.size, self._pid, 0)
                    break
            else:
                return  # more processes than entries: their slots cannot be taken back if they die
        offset = _LAYOUT.size + self._holder * _HOLDER.size
        pid, held = _HOLDER.unpack_from(self._map, offset)
        _HOLDER.pack_into(self._map, offset, self._pid, held + change)

    def _reclaim(self, state: _State) -> None:
        """Take back the slots of processes that died holding them (under the lock)."""
        if self._map is None:
            return
        for index in range(_HOLDERS):
            offset = _LAYOUT.size + index * _HOLDER.size
            pid, held = _HOLDER.unpack_from(self._map, offset)
            if pid and pid != self._pid and not _alive(pid):
                state.in_flight = max(0, state.in_flight - held)
                _HOLDER.pack_into(self._map, offset, 0, 0)
                state.served = state.tickets  # its waiters' tickets too: the queue starts afresh

    def snapshot(self) -> _State:
        """A copy of the budget as it is now (for tests and the report)."""
        self._forked()
        with self._lock, self._transaction() as state:
            return dataclasses.replace(state)

    @property
    def limit(self) -> int:
        """How many requests may be in flight now."""
        return self.snapshot().allowed

    # -- slots -------------------------------------------------------------------------------------

    def try_acquire(self) -> Slot | None:
        """A slot if one is free now (and no request waits for one), else None."""
        self._forked()
        with self._lock:
            taken = self._enter(join=False)
            return taken if isinstance(taken, Slot) else None

    def _enter(self, *, join: bool) -> Slot | int | None:
        """A slot when one is free and no request waits; else (``join``) a ticket in the queue."""
        with self._transaction() as state:
            if state.in_flight < state.allowed and state.tickets == state.served:
                return self._hand_out(state)
            if not join:
                return None
            state.tickets += 1
            return state.tickets - 1

    def _turn(self, ticket: int, *, late: bool) -> Slot | None:
        """A slot for the waiter holding ``ticket`` once as many are free as there are waiters ahead
        of it (tickets leave in any order: ``served`` counts them, so this is first come, first served
        up to a little slack); ``late`` (it waited long): any free slot, so that the ticket of a waiter
        whose process died cannot hold the queue."""
        with self._transaction() as state:
            free = state.allowed - state.in_flight
            if free <= 0 or (ticket - state.served >= free and not late):
                return None
            state.served += 1
            return self._hand_out(state)

    def _hand_out(self, state: _State) -> Slot:
        state.in_flight += 1
        state.seq += 1
        return Slot(self, state.seq, state.in_flight, self.clock())

    def acquire(self, deadline: float | None = None) -> Slot:
        """A slot, once one is free (after the requests already waiting); :class:`DeadlineExceeded`
        if ``deadline`` (a ``time.monotonic`` instant, the check's own) passes first. No other bound:
        a queued request waits its turn."""
        self._forked()
        waited_since = time.monotonic()
        with self._lock:
            taken = self._enter(join=True)
            if isinstance(taken, Slot):
                return taken
            assert taken is not None
            try:
                return self._wait(taken, deadline, waited_since)
            except BaseException:  # out of time, or interrupted: its ticket leaves the queue
                with self._transaction() as state:
                    state.served = min(state.tickets, state.served + 1)
                self._freed.notify_all()  # a waiter behind it may have its turn now
                raise

    def _wait(self, ticket: int, deadline: float | None, waited_since: float) -> Slot:
        """Wait (holding ``_lock``, released while asleep) for the turn of ``ticket``."""
        poll = POLL[0]
        reclaimed = False
        while True:
            now = time.monotonic()
            slot = self._turn(ticket, late=now - waited_since > LATE_AFTER)
            if slot is not None:
                return slot
            if deadline is not None and now >= deadline:
                raise DeadlineExceeded("the check ran out of time waiting for its turn to send")
            if self.path is not None and not reclaimed and now - waited_since > RECLAIM_AFTER:
                reclaimed = True
                with self._transaction() as state:
                    self._reclaim(state)
                continue
            # a shared budget is freed by other processes too: look again soon
            pause = poll if self.path is not None else None
            poll = min(poll * 2, POLL[1])
            if deadline is not None:
                pause = min(pause or math.inf, max(deadline - now, 0.0))
            self._freed.wait(pause)

    def _release(self, slot: Slot, *, answered: bool, timed_out: bool) -> None:
        latency = self.clock() - slot.started
        with self._lock:
            with self._transaction() as state:
                in_flight = max(slot.at_start, state.in_flight)
                state.in_flight = max(0, state.in_flight - 1)
                if timed_out:
                    _cut(state, slot)
                elif answered:
                    _sample(state, slot, latency, in_flight, slot.started + latency)
            self._freed.notify_all()


def _sample(state: _State, slot: Slot, latency: float, in_flight: int, now: float) -> None:
    """Adapt the limit to one answer's latency, ``in_flight`` requests having been out with it (the
    most of when it went and when it came back)."""
    if latency < state.floor:
        state.floor = latency
    floor = state.floor
    # the requests out when this one went: served one at a time, it waited for all of them
    ahead = slot.at_start
    # ... and answers come back one service time apart (a stall answers all at once)
    spaced = now - state.last_answer >= SERIAL_SHARE * floor
    state.last_answer = now
    if ahead >= 2 and spaced and latency >= floor + SLACK and latency >= SERIAL_SHARE * ahead * floor:
        state.serial_score += 1
    elif ahead >= 2 and latency < CONCURRENT * floor + SLACK:
        state.serial_score = max(0, state.serial_score - 1)
        if state.serial:  # a probe served concurrently: the pin goes
            state.serial = False
            state.calm = 0
    if state.serial_score >= SERIAL_AFTER or (state.serial and ahead >= 2 and state.serial_score):
        state.serial = True
        state.slow_start = False
        state.serial_score = 0
        state.calm = 0
        state.limit = 1.0
        state.cut_seq = state.seq
        return
    if state.serial:
        state.calm += 1
        if state.calm >= PROBE_AFTER:
            state.calm = 0
            state.limit = 2.0
        return
    if latency > JUMP * floor + SLACK:
        _cut(state, slot)
        return
    if in_flight * 2 < state.allowed or latency >= CONCURRENT * floor + SLACK:
        return  # the budget was not what held the run back, or the latency is not flat
    state.limit += 1.0 if state.slow_start else 1.0 / max(state.limit, 1.0)
    state.limit = min(state.limit, float(state.cap))


def _cut(state: _State, slot: Slot) -> None:
    """Halve the limit, once per round trip."""
    if slot.seq <= state.cut_seq:
        return
    state.slow_start = False
    state.limit = max(1.0, state.limit / 2)
    state.cut_seq = state.seq


def _values(state: _State) -> tuple[object, ...]:
    return tuple(getattr(state, name) for name in _FIELDS)


def _pack(state: _State) -> bytes:
    return _LAYOUT.pack(*_values(state))


def _unpack(buffer: mmap.mmap) -> _State:
    return _State(*_LAYOUT.unpack_from(buffer, 0))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
