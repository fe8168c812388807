"""The adaptive limiter: its arithmetic on an injected clock (a simulated server, no waiting), its
waiting, and a budget shared between processes."""

from __future__ import annotations

import heapq
import itertools
import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from amp_conformance.engine import limiter as limiter_module
from amp_conformance.engine.limiter import INITIAL, PROBE_AFTER, AdaptiveLimiter, Slot
from amp_conformance.engine.outcomes import DeadlineExceeded


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def simulate(
    limiter: AdaptiveLimiter,
    clock: Clock,
    *,
    senders: int,
    requests: int,
    serial: float | None = None,
    delay: float = 0.1,
) -> tuple[list[int], list[float]]:
    """``senders`` always wanting to send, against a server that serves one at a time taking
    ``serial`` seconds each (FIFO), or answers every request ``delay`` seconds after it came. The
    limit seen before each request went out, and each answer's latency."""
    limits: list[int] = []
    latencies: list[float] = []
    waiting = senders
    events: list[tuple[float, int, Slot]] = []
    server_free = clock.now
    sent = 0
    order = 0
    while sent < requests or events:
        while waiting and sent < requests:
            limits.append(limiter.limit)
            slot = limiter.try_acquire()
            if slot is None:
                limits.pop()
                break
            waiting -= 1
            sent += 1
            if serial is not None:
                server_free = max(server_free, clock.now) + serial
                answered = server_free
            else:
                answered = clock.now + delay
            order += 1
            heapq.heappush(events, (answered, order, slot))
        if not events:
            break
        clock.now, _, slot = heapq.heappop(events)
        latencies.append(clock.now - slot.started)
        slot.done()
        waiting += 1
    return limits, latencies


def test_slow_start_grows_the_limit_while_latency_stays_flat() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(clock=clock)
    assert limiter.limit == INITIAL
    limits, latencies = simulate(limiter, clock, senders=40, requests=200, delay=0.1)
    # doubling per round trip: 4, 8, 16, 32, then enough for all 40 senders
    assert limiter.limit >= 40
    assert max(latencies) == pytest.approx(0.1)
    assert limits.index(max(limits)) < 4 + 8 + 16 + 32 + 40


def test_the_limit_grows_only_when_it_was_in_use() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(clock=clock)
    simulate(limiter, clock, senders=1, requests=50, delay=0.1)
    assert limiter.limit == INITIAL


def test_a_latency_jump_halves_the_limit_once_per_round_trip() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(clock=clock)
    simulate(limiter, clock, senders=16, requests=100, delay=0.1)
    grown = limiter.limit
    assert 16 <= grown <= 2 * 16 + 1  # slow start grows while at least half the limit is in use
    slots = [limiter.try_acquire() for _ in range(16)]
    clock.now += 0.5  # well above 2 x the 0.1 s floor + slack: the server is queueing
    for slot in slots:
        assert slot is not None
        slot.done()
    assert limiter.limit == grown // 2  # sixteen slow answers of one round trip: one cut
    assert not limiter.snapshot().serial  # all at once after a stall: not a server serving one by one
    jitter = AdaptiveLimiter(clock=clock)
    simulate(jitter, clock, senders=4, requests=20, delay=0.002)
    slot = jitter.try_acquire()
    assert slot is not None
    clock.now += 0.03  # 15x a 2 ms floor, but within the absolute slack: no cut
    slot.done()
    assert not jitter.snapshot().serial and jitter.snapshot().slow_start


def test_after_a_cut_the_limit_grows_by_one_per_round_trip() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(clock=clock, initial=8)
    slot = limiter.try_acquire()
    assert slot is not None
    slot.done(answered=False, timed_out=True)
    assert limiter.limit == 4
    simulate(limiter, clock, senders=20, requests=20, delay=0.1)  # 4 + 5 + 6 + 5 answers
    assert 6 <= limiter.limit <= 8  # about one more per round trip (slow start: 24)


def test_a_timeout_halves_the_limit_and_never_below_one() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(clock=clock)
    for expected in (2, 1, 1):
        slot = limiter.try_acquire()
        assert slot is not None
        slot.done(answered=False, timed_out=True)
        assert limiter.limit == expected


def test_a_serialising_server_is_detected_within_a_few_requests() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(clock=clock)
    limits, latencies = simulate(limiter, clock, senders=12, requests=40, serial=0.3)
    assert limiter.snapshot().serial
    first_pinned = next(i for i, limit in enumerate(limits) if limit == 1)
    assert first_pinned <= 12
    assert all(limit == 1 for limit in limits[first_pinned:])
    # once pinned, each answer takes one service time: no queue at the server to time out in
    assert max(latencies[first_pinned + 2 :]) == pytest.approx(0.3)
    assert max(latencies) <= 5 * 0.3 + 1e-9  # the slow start's first step, then no more


def test_a_pinned_limit_probes_two_and_stays_pinned_on_a_serial_server() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(clock=clock)
    limits, _ = simulate(limiter, clock, senders=4, requests=20 + 3 * PROBE_AFTER, serial=0.3)
    pinned = limits[limits.index(1) :]
    probes = sum(1 for pair in itertools.pairwise(pinned) if pair == (1, 2))
    assert 1 <= probes <= 3  # two let go at once now and then, pinned again each time
    assert set(pinned) == {1, 2}
    assert limiter.snapshot().serial


def test_a_pin_is_lifted_when_the_probe_is_served_concurrently() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(clock=clock)
    simulate(limiter, clock, senders=4, requests=20, serial=0.3)
    assert limiter.snapshot().serial
    simulate(limiter, clock, senders=4, requests=PROBE_AFTER + 20, delay=0.3)  # the server got threads
    assert not limiter.snapshot().serial
    assert limiter.limit >= 2


def test_max_in_flight_caps_the_limit() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(clock=clock, cap=3)
    assert limiter.limit == 3
    limits, _ = simulate(limiter, clock, senders=20, requests=100, delay=0.1)
    assert max(limits) == 3
    one = AdaptiveLimiter(clock=clock, cap=1)
    first = one.try_acquire()
    assert first is not None and one.try_acquire() is None


def test_a_queued_request_waits_for_a_slot_and_a_deadline_ends_the_wait() -> None:
    limiter = AdaptiveLimiter(cap=1)
    held = limiter.acquire()
    with pytest.raises(DeadlineExceeded):
        limiter.acquire(deadline=time.monotonic() + 0.05)
    got: list[Slot] = []
    waiter = threading.Thread(target=lambda: got.append(limiter.acquire()))
    waiter.start()
    time.sleep(0.05)
    assert not got  # still queued: no timeout of its own
    held.done()
    waiter.join(2)
    assert got and got[0].at_start == 1


def _hold(path: str, rounds: int, peak: str) -> None:
    """A process taking slots of the shared budget, noting the most in flight it saw."""
    limiter = AdaptiveLimiter.join(path)
    seen = 0
    for _ in range(rounds):
        slot = limiter.acquire()
        seen = max(seen, limiter.snapshot().in_flight)
        time.sleep(0.002)
        slot.done(answered=False)
    Path(peak).write_text(str(seen))


def test_processes_sharing_a_budget_never_exceed_it_together(tmp_path: Path) -> None:
    path = str(tmp_path / "budget")
    AdaptiveLimiter.shared(path, cap=3)
    context = multiprocessing.get_context("spawn")
    peaks = [str(tmp_path / f"peak{n}") for n in range(2)]
    workers = [context.Process(target=_hold, args=(path, 60, peak)) for peak in peaks]
    threads_limiter = AdaptiveLimiter.join(path)  # and this process's threads, on the same budget
    highest = [0]

    def local() -> None:
        for _ in range(60):
            slot = threads_limiter.acquire()
            highest[0] = max(highest[0], threads_limiter.snapshot().in_flight)
            time.sleep(0.002)
            slot.done(answered=False)

    threads = [threading.Thread(target=local) for _ in range(3)]
    for worker in workers:
        worker.start()
    for thread in threads:
        thread.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    for thread in threads:
        thread.join(60)
    seen = [int(Path(peak).read_text()) for peak in peaks] + highest
    assert max(seen) == 3  # full use of the budget, never more
    assert threads_limiter.snapshot().in_flight == 0


def _hammer(path: str, seconds: float) -> None:
    """A process sending one request after another, each right after the last one's answer."""
    limiter = AdaptiveLimiter.join(path)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        slot = limiter.acquire()
        time.sleep(0.005)
        slot.done(answered=False)


def test_a_process_sending_back_to_back_does_not_starve_another_processs_waiter(tmp_path: Path) -> None:
    """One slot; a worker re-takes it the moment it gives it back, another process's request waits
    (it looks every few ms): it queues ahead of the worker's next request, so it gets its turn."""
    path = str(tmp_path / "budget")
    AdaptiveLimiter.shared(path, cap=1)
    worker = multiprocessing.get_context("spawn").Process(target=_hammer, args=(path, 4.0))
    worker.start()
    limiter = AdaptiveLimiter.join(path)
    try:
        while limiter.snapshot().seq < 5:  # the worker is sending
            time.sleep(0.01)
        for _ in range(5):
            slot = limiter.acquire(deadline=time.monotonic() + 0.5)
            slot.done(answered=False)
    finally:
        worker.join(10)
    assert worker.exitcode == 0
    state = limiter.snapshot()
    assert state.tickets == state.served  # nobody left waiting


def test_the_slots_of_a_process_that_died_holding_them_are_taken_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "budget")
    AdaptiveLimiter.shared(path, cap=2)
    pid = os.fork()
    if pid == 0:  # the child takes both slots and dies with them
        child = AdaptiveLimiter.join(path)
        child.acquire()
        child.acquire()
        os._exit(0)
    os.waitpid(pid, 0)
    monkeypatch.setattr(limiter_module, "RECLAIM_AFTER", 0.05)
    parent = AdaptiveLimiter.join(path)
    assert parent.snapshot().in_flight == 2
    slot = parent.acquire(deadline=time.monotonic() + 5)
    assert slot.at_start == 1


def test_a_shared_acquire_costs_microseconds(tmp_path: Path) -> None:
    path = str(tmp_path / "budget")
    limiter = AdaptiveLimiter.shared(path)
    started = time.perf_counter()
    for _ in range(2000):
        limiter.acquire().done()
    per_request = (time.perf_counter() - started) / 2000
    assert per_request < 0.001  # well under a millisecond (a few tens of microseconds here)


class _Counting(AdaptiveLimiter):
    """A limiter that counts the slots taken and the most held at once."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.taken = 0
        self.peak = 0

    def acquire(self, deadline: float | None = None) -> Slot:
        slot = super().acquire(deadline)
        self.taken += 1
        self.peak = max(self.peak, self.snapshot().in_flight)
        return slot


def test_the_fuzzers_requests_wait_for_slots_of_the_runs_limiter() -> None:
    from amp_conformance.amp01.fuzz_profile import PROFILE
    from amp_conformance.amp01.selfserve import BundledServer
    from amp_conformance.fuzz import FuzzConfig, run_fuzz

    limiter = _Counting(cap=2)
    with BundledServer() as server:
        config = FuzzConfig(
            base_url=server.url.removesuffix("/amp/v1"),
            headers={"X-AMP-Agent-ID": "amp-ct-fuzz"},
            profile=PROFILE,
            max_examples=2,
            seconds=10.0,
            seed=1,
            limiter=limiter,
        )
        result = run_fuzz(config)
    assert result.examples > 0 and result.errors == [], result.errors
    assert limiter.taken >= result.examples  # every request (the engine's, the probes') took a slot
    assert limiter.peak <= 2
    assert limiter.snapshot().in_flight == 0  # every slot given back
