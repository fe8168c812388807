"""Wall time of a ``--no-fuzz`` run against a distant server, serial and with workers.

Starts the bundled AMP v0.1 reference server (keys mode, as the self-test) behind an added delay per
response, a fresh server for every (delay, workers) row so runs share no state, and runs

    amp-conformance --base-url URL --api-key A=K ... --admin-token T --allow-global-effects
                    --no-fuzz [--workers N] --json PATH -q

as a separate process. Prints per row: the delay, the workers, wall seconds (interpreter start-up
included), the requests the run sent (the report's ``run.requests.total``), the verdict and exit code,
the speed-up over the 1-worker row of the same delay, and the ratio of wall time to the critical-path
bound: the longest request chain of a single check (the report's per-check ``requests``, max over
checks) times the delay, the least a run could take however many workers it had. Also the serial
group's requests and seconds (the checks a parallel run keeps on one worker, one at a time: another
floor), the report's own duration (wall time less interpreter start-up and collection), and the
seconds before the first answer a check got and after the last one (start-up, cleanup).

    python benchmarks/latency.py                       # delays 50 and 200 ms; 1, 4 and 8 workers
    python benchmarks/latency.py --delay 100 --workers 1,8   # issue 13's bar: 8 workers >= 4x faster
    python benchmarks/latency.py --delays 50 --workers 1 --only crud --keep reports/
    python benchmarks/latency.py --delay 100 --workers 8 --timeline   # where each run's time went

``--timeline`` loads ``plugins/amp_timeline.py`` into every process of each run (``PYTEST_PLUGINS``) and
prints, under the row, when the workers (serially, the one process) were configured and collected, ran
their first and last checks and ended, and when the controller ended, in seconds from the command's
start, with each worker's own line.

Then a "server-bound" row (``--service-ms``, default 50; ``--service-ms 0`` leaves it out): the same
server made to serve one request at a time, each taking that long, as a persistent store embedding
every write does. Workers cannot help there: the wall is about the request count times the service
time, which the row prints as its bound (``chain`` is then the request count).

Figures are printed, never asserted. A serial 200 ms row takes several minutes.

Measured 2026-12-01 04:03-04:23 UTC on 2 cores, machine otherwise idle (896 requests serially):

    delay ms workers  wall s requests  speed-up  passes group s  1st answer  after last
          50       1    49.9      896     1.00x             8.1           0           1
          50       4    19.7      962     2.53x             8.3           2           1
          50       8    17.7      957     2.82x             8.5           5           2
         100       1    86.9      896     1.00x            12.2           0           2
         100       8    20.7      957     4.20x            12.6           4           1
         200       1   164.3      896     1.00x            20.8           0           4
         200       4    49.6      943     3.32x            21.4           4           2
         200       8    31.5      957     5.22x            21.3           5           3

A parallel run sends ~7% more requests (a value ``amp.shared`` makes is made once per worker whose
checks need it) and its workers take a few seconds to start on two cores (about 1.3 CPU-seconds each).
The floor with many workers is the serial group of lifecycle passes (one check at a time on one
worker, ~87 requests plus the decay checks' waits); the longest single check is 38 requests.

Issue 25, measured 2026-12-01 20:56-21:06 UTC on the same 2 cores shared with other work (load average
about 6.5, so the parallel rows are start-up bound: the first answer came 11-12 s into the run), main
then this tree, one run each:

    server workers  wall s requests  speed-up  serial req  serial s  1st answer
     100ms       1    94.6      896     1.00x          84      12.6           0   (main)
     100ms       8    36.6      957     2.58x          87      13.4          11   (main)
     100ms       1    89.9      896     1.00x          84      10.2           0
     100ms       8    33.1      957     2.72x          87      10.7          12
    1@50ms       1    61.1      896     1.00x          84       7.1           0   (bound 44.8 s)
    1@50ms       8    69.8      957     0.88x          87      39.7          12   (bound 47.9 s)

Issue 25 item 1 (the passes group shared further), measured 2026-12-01 23:00-23:14 UTC on the same 2
cores shared with other work, main (9bb305a) then this tree, one run each:

    server workers  wall s requests  speed-up  serial req  serial s
     100ms       1    93.7      990     1.00x          85      10.1   (main)
     100ms       1    89.8      995     1.00x          82       5.5
     100ms       8    20.6     1050     4.36x          82       5.8

The decay check's fast cell and the ranking check's cells are made with the shared passes, so their
clocks run while other checks work (the decay check 2.18 s -> 0.74 s, the ranking check 1.42 s ->
0.21 s); the stale-DELETE check left the group (its cell cannot be moved by a pass).

Session 4 together (fewer requests, the passes group shared, work starting on the first worker
ready, bytecode kept as an installed tool has it), 2026-12-01 23:21-23:23 UTC, machine otherwise idle:

    server workers  wall s  run s requests  speed-up chain bound s wall/bound serial req serial s 1st answer
     100ms       1    84.5   83.2      958     1.00x    38     3.8       22.2         82      5.5          0
     100ms       8    17.3   15.9     1021     4.88x    38     3.8        4.6         82      5.8          2

Where the 8-worker run's 15.9 s go: the checks' own time summed over workers is 81.7 s (10.2 s per
worker if perfectly shared); the first answer comes ~2 s in (the preflight's 8 requests, then eight
workers starting on two cores: ~0.85 CPU-s each, so about 3.5 s of both cores before all are up);
after the last answer ~1.5 s go to each worker's cleanup and the controller's merge and report. The
bars (>= 6x, <= 3x the 3.8 s bound) would need the start-up CPU of eight processes off two cores.

Session 5 (requests cut to 847, shared steps made once across workers, workers starting in tiers of
one per core while the preflight runs, the costliest units first, cleanup of what no other worker uses
as soon as a worker is done), 2026-12-02 02:05 UTC, machine otherwise idle:

    server workers  wall s  run s requests  speed-up chain bound s wall/bound serial req serial s
     100ms       1    76.7   75.8      847     1.00x    34     3.4       22.6         70      4.4
     100ms       8    13.8   12.9      850     5.55x    34     3.4        4.1         70      4.9
    1@50ms       8    46.2   45.4      858         -    34    42.9        1.1         70     20.3   (02:50)

Where the 8-worker run's 13.8 s go (a timeline of the same run): the first two workers are ready
~1.1-1.6 s in, the last two ~1 s later; the checks' own time summed over the workers is ~73 s (9.1 s
each if perfectly shared), and the last worker finishes its checks ~1.5 s after the first; then its
cleanup, the controller's report and the process's exit take ~1 s. The fixed part (start-up, the
spread of the ends, the end) is ~4 s of the 13.8; 6x needs it under ~3 s.

Session 6 (workers forked from a fork server started with the command's first line, the briefing in
two parts, the command's end without interpreter teardown, 847 -> 823 requests),
2026-12-02 07:12-07:14 UTC, machine otherwise idle:

    server workers  wall s  run s requests  speed-up chain bound s wall/bound serial req serial s
     100ms       1    73.4   72.6      823     1.00x    34     3.4       21.6         71      4.5
     100ms       8    11.9   11.1      826     6.18x    46     4.6        2.6         71      4.8
    1@50ms       8    43.9   43.3      827         -    46    41.4        1.1         71     23.7

These rows were measured with units of one check, since taken back (a check could adopt a value
another worker made with other roles); with module units the same tree's 8-worker runs took 11.5 and
11.8 s (6.3x and 6.2x over a 72.7 s serial run, chain 36, 3.2-3.3x its 3.6 s bound). Other
8-worker runs with units of one check: 11.3 and 11.6 s. Where the 11.9 s go: the first worker is forked
~0.55 s in and xdist has started all eight by ~1.1 s (~30-90 ms each, one after the other); the first
check starts ~1.1-1.2 s in (the preflight's one request, then work); the workers' checks end within
~0.05 s of each other ~10.6-10.9 s in; cleanup, report and exit take ~0.5-0.7 s. Read the wall/bound
figure with care: the chain went from 36 to 46 requests because with units of one check the check
that first needs several shared values makes them all; against session 5's 3.6 s bound this wall is
3.3x. The bound the issue meant (the serial row's 34-request chain, 3.4 s) would need the wall under
10.2 s: the work itself (the checks' requests over eight workers, ~9.5 s) leaves no room for it.

Session 7 (823 -> 786 requests; independent requests of a check sent together, ``amp.at_once``:
the refusal steps, the access matrix's creates, the status trio's reads; the scheduler keeping the
costliest unit for the worker that frees up first), 2026-12-02 16:16-16:25 UTC, machine otherwise
idle, three runs of ``--delay 100 --workers 1,8``:

    server workers  wall s  run s requests  speed-up chain bound s wall/bound serial req serial s
     100ms       1    60.7   60.0      786     1.00x    38     3.8       16.0         68      4.3
     100ms       8    10.4    9.4      790     5.84x    34     3.4        3.1         68      5.7
     100ms       1    60.9   60.2      786     1.00x    38     3.8       16.0         68      4.3
     100ms       8    10.4    9.6      790     5.88x    34     3.4        3.0         68      5.8
     100ms       1    60.9   60.1      786     1.00x    38     3.8       16.0         68      4.4
     100ms       8    10.0    9.4      790     6.06x    34     3.4        2.9         68      5.6
    1@50ms       8    42.2   41.6      790         -    34    39.5        1.1         68     27.3

Other 8-worker runs: 9.8, 9.9, 10.0 and 10.0 s. Where the ~10 s go (a timeline): the first worker's
first check ~1.05-1.2 s after the command starts, the last worker's ~1.4-1.7 s (xdist starts the
gateways one after the other; each worker's collection takes 0.15-0.35 s of a shared core); the
workers' last checks end ~8.4-9.6 s in (the last units handed out near 8 s take 1-1.3 s each);
cleanup, the controller's report and exit ~0.5 s. ``at_once`` shortens the serial row as much as the
parallel one, so the speed-up barely moves (5.8-6.1x) while the wall drops (11.5 -> ~10 s). Read the
bound with care too: ``chain`` counts a check's requests, and a check whose requests go out together
now waits for fewer round trips than it sends, so the printed bound overstates the floor.

Session 9 (a worker let go at the very end rather than handed a unit that would wait behind its last
check), 2026-12-03 08:50-09:12 UTC, machine otherwise idle, full runs of ``--delay 100 --workers 1,8``
(the 1@50ms rows from the first and the last two):

    server workers  wall s  run s requests  speed-up chain bound s wall/bound serial req serial s
     100ms       1    59.2   58.8      786     1.00x    38     3.8       15.6         68      4.3
     100ms       8     9.6    9.0      790     6.19x    34     3.4        2.8         68      5.8
     100ms       1    60.5   60.0      786     1.00x    38     3.8       15.9         68      4.4
     100ms       8    10.3    9.6      790     5.90x    34     3.4        3.0         68      6.0
     100ms       1    59.8   59.3      786     1.00x    38     3.8       15.7         68      4.3
     100ms       8     9.8    9.3      790     6.08x    34     3.4        2.9         68      5.7
     100ms       1    59.5   59.0      786     1.00x    38     3.8       15.7         68      4.3
     100ms       8     9.9    9.4      790     6.01x    34     3.4        2.9         68      5.7
     100ms       1    59.9   59.4      786     1.00x    38     3.8       15.8         68      4.3
     100ms       8     9.6    9.1      790     6.26x    34     3.4        2.8         68      5.6
    1@50ms       8    41.9   41.5      790         -    34    39.5        1.1         68     27.6

About forty other 8-worker runs that hour (this tree, main before it, the variants tried):
9.3-10.4 s and once 11.2 s; the host's load moved them more than any change tried did. Where ~9.7 s go (a
timeline of workers, fork server and controller, from the command's start): the fork server is up
0.13 s in and has imported what workers need 0.55 s in; the controller reaches xdist's setup at 0.44
and starts the eight gateways from 0.55 to ~1.25 s, each worker then needing ~0.2 CPU-s (0.06 to
start pytest, 0.12-0.15 to collect) of two cores that all eight share, so start-up is CPU-bound: the
gateways started at once from threads (tried) changed nothing. The workers' checks (~62
worker-seconds, nearly all waiting on answers) end within ~0.4 s of their mean, close to what the
longest-first order gives with exact unit costs (a simulation: 0.3 s; splitting any one unit in two
gains at most 0.1 s); then cleanup (two round trips: every worker archives and deletes the cells of
its shared steps once all are done) ~0.25-0.35 s, and the controller's merge and JSON report ~0.2 s. The
fixed part is ~2.2 s of the 9.7: the speed-up sits at 5.9-6.3x, and what shortens both rows (fewer
round trips) does not raise it.

Session 10 (786 -> 742 requests: the access matrix's pooled refusal cells, one create of every ignored
member, shared refused PATCHes), 2026-12-03 13:27-13:35 UTC, machine otherwise idle, five runs of
``--delay 100 --workers 1,8 --service-ms 0``, then two more 8-worker rows (one with ``--service-ms 50``):

    server workers  wall s  run s requests  speed-up chain bound s wall/bound serial req serial s
     100ms       1    58.2   57.5      742     1.00x    36     3.6       16.2         68      4.3
     100ms       8    10.1    9.2      749     5.78x    34     3.4        3.0         68      5.7
     100ms       1    57.8   57.3      742     1.00x    36     3.6       16.1         68      4.3
     100ms       8     9.7    9.1      746     5.99x    34     3.4        2.8         68      5.7
     100ms       1    58.0   57.3      742     1.00x    36     3.6       16.1         68      4.3
     100ms       8     9.6    9.0      749     6.06x    34     3.4        2.8         68      5.7
     100ms       1    58.3   57.8      742     1.00x    36     3.6       16.2         68      4.3
     100ms       8     9.4    8.8      749     6.21x    34     3.4        2.8         68      5.5
     100ms       1    58.4   57.8      742     1.00x    36     3.6       16.2         68      4.3
     100ms       8    10.2    9.4      746     5.75x    34     3.4        3.0         68      5.8
     100ms       8     9.8    9.2      746         -    34     3.4        2.9         68      5.5
    1@50ms       8    39.8   39.2      749         -    34    37.5        1.1         68     25.3

An 8-worker row measured just before (with the 1-worker row that re-measured ``unit_costs.json``,
58.0 s) took 9.3 s (6.24x, 2.7x the bound). The serial row is ~1.5 s shorter than session 9's and the
parallel one about as long as before: the cuts fall on work spread over eight workers, so they lower
the bound ratio and the request count, not the speed-up, which stays at 5.8-6.2x with the host's noise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

# This folder holds a script named reference_server.py: put the repository first so that
# ``import reference_server`` finds the package, not the benchmark.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# the pytest plugin ``--timeline`` loads into every process of a run (``_PLUGINS``)
sys.path.insert(1, str(Path(__file__).resolve().parent / "plugins"))

import amp_timeline

from amp_conformance.amp01.selfserve import BundledServer

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

RUN_TIMEOUT = 3600.0
#: The folder of the pytest plugin ``--timeline`` loads into every process of a run.
_PLUGINS = Path(amp_timeline.__file__).resolve().parent


@dataclasses.dataclass(frozen=True)
class Row:
    """One run's figures; the report's are ``None`` when the run left no report to read them from."""

    delay_ms: int
    workers: int
    wall: float
    exit_code: int
    problem: str | None
    verdict: str | None = None
    run_seconds: float | None = None
    requests: int | None = None
    chain: int | None = None
    slowest: str | None = None
    serial_requests: int | None = None
    serial_seconds: float | None = None
    first_answer: float | None = None
    after_last: float | None = None
    service_ms: int = 0
    """Server-bound: every request served alone, taking this long (0: the delay row)."""
    timeline: list[str] = dataclasses.field(default_factory=list)
    """With ``--timeline``: where the run's time went (``plugins/amp_timeline.summary``)."""

    @property
    def bound(self) -> float | None:
        """The bound in seconds: the slowest check's request chain times the delay; server-bound, the
        request count times the service time (one at a time, whatever the workers)."""
        if self.service_ms:
            return None if self.requests is None else self.requests * self.service_ms / 1000
        return None if self.chain is None else self.chain * self.delay_ms / 1000

    @property
    def server(self) -> str:
        return f"1@{self.service_ms}ms" if self.service_ms else f"{self.delay_ms}ms"


class OneAtATime:
    """ASGI middleware: one HTTP request at a time, each taking ``service`` seconds before the app
    answers it (a server whose every request costs server time and which serves one at a time)."""

    def __init__(self, app: ASGIApp, service: float):
        self._app = app
        self._service = service
        self._lock: asyncio.Lock | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if self._lock is None:  # made on the server's own event loop
            self._lock = asyncio.Lock()
        async with self._lock:
            await asyncio.sleep(self._service)
            await self._app(scope, receive, send)


def _int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not values or any(value < 0 for value in values):
        raise argparse.ArgumentTypeError(f"expected non-negative integers: {text!r}")
    return values


def _command(server: BundledServer, workers: int, report: Path, only: str | None) -> list[str]:
    command = [sys.executable, "-m", "amp_conformance", "--base-url", server.url]
    for agent, key in server.api_keys.items():
        command += [f"--api-key={agent}={key}"]
    command += [f"--admin-token={server.admin_token}", "--allow-global-effects", "--no-fuzz"]
    if workers > 1:  # a serial run needs no --workers (and works before the option exists)
        command += ["--workers", str(workers)]
    if only:
        command += ["--only", only]
    return [*command, "--json", str(report), "-q"]


def _last_line(*texts: str) -> str:
    for text in texts:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            return lines[-1][:300]
    return "no output"


#: The runs' bytecode cache, outside the tree (set by :func:`_warm_bytecode`).
_CHILD_ENV: dict[str, str] | None = None


def _warm_bytecode(cache: Path) -> None:
    """Let the runs keep compiled bytecode in ``cache`` and fill it once, before any row is timed.

    An installed tool has its modules compiled at install; a machine with PYTHONDONTWRITEBYTECODE=1
    (this one) would otherwise make each process, every worker included, compile every module and
    rewrite every check module's asserts again (~0.4 CPU-seconds each), which is not what a user's
    run costs. The cache stays outside the tree (PYTHONPYCACHEPREFIX)."""
    global _CHILD_ENV
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    _CHILD_ENV = env
    _run([sys.executable, "-m", "amp_conformance", "--only", "health", "--no-fuzz", "-q"])


def _run(command: list[str], extra_env: dict[str, str] | None = None) -> tuple[int, str, str, float]:
    """Run ``command`` in its own process group; every way out stops the whole group."""
    env = {**(_CHILD_ENV if _CHILD_ENV is not None else os.environ), **(extra_env or {})}
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        stdout, stderr = process.communicate(timeout=RUN_TIMEOUT)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    return process.returncode, stdout, stderr, time.perf_counter() - started


def _serial_group() -> Callable[[str], bool]:
    """Whether a report's check id is in the serial group of passes (the longest one): the parallel
    scheduler's own rule."""
    from amp_conformance.amp01.protocol import PASSES, PROTOCOL
    from amp_conformance.engine.parallel import serial_check_finder

    group_of = serial_check_finder(PROTOCOL)
    return lambda check_id: group_of(check_id.split("/checks/", 1)[-1]) == PASSES


def _server(delay_ms: int, service_ms: int) -> BundledServer:
    server = BundledServer(keys=True, delay=delay_ms / 1000)
    if service_ms:
        # the app uvicorn will serve, wrapped before the server starts (uvicorn loads it at start-up)
        config = server._server.config
        config.app = OneAtATime(config.app, service_ms / 1000)
    return server


def _timeline_env(path: Path) -> dict[str, str]:
    """The environment that loads ``plugins/amp_timeline`` into every process of a run."""
    plugins = ",".join(p for p in (os.environ.get("PYTEST_PLUGINS"), "amp_timeline") if p)
    python_path = os.pathsep.join(p for p in (str(_PLUGINS), os.environ.get("PYTHONPATH")) if p)
    return {"AMP_TIMELINE": str(path), "PYTEST_PLUGINS": plugins, "PYTHONPATH": python_path}


def measure(
    delay_ms: int,
    workers: int,
    only: str | None,
    keep: Path | None = None,
    *,
    service_ms: int = 0,
    timeline: bool = False,
) -> Row:
    """One row: a fresh delayed (or, with ``service_ms``, one-at-a-time) server, one run of the
    command against it (its report kept in ``keep``; with ``timeline``, where its time went)."""
    with tempfile.TemporaryDirectory() as folder, _server(delay_ms, service_ms) as server:
        name = f"server-bound-{service_ms}ms" if service_ms else f"latency-{delay_ms}ms"
        report_path = (keep or Path(folder)) / f"{name}-{workers}w.json"
        report_path.unlink(missing_ok=True)
        events = Path(folder) / "timeline.jsonl"
        started = time.time()
        code, stdout, stderr, wall = _run(
            _command(server, workers, report_path, only), _timeline_env(events) if timeline else None
        )
        lines = amp_timeline.summary(events, started) if timeline and events.exists() else []
        report: dict[str, Any] | None = None
        if report_path.exists():
            with contextlib.suppress(ValueError):
                report = json.loads(report_path.read_text())
    if report is None:
        return Row(
            delay_ms,
            workers,
            wall,
            code,
            f"no JSON report (exit {code}): {_last_line(stderr, stdout)}",
            service_ms=service_ms,
            timeline=lines,
        )
    checks: list[dict[str, Any]] = report.get("checks") or []
    run: dict[str, Any] = report.get("run") or {}
    slowest = max(checks, key=lambda c: c.get("requests") or 0, default=None)
    in_serial_group = _serial_group()
    serial = [c for c in checks if in_serial_group(str(c.get("id")))]
    verdict = str((report.get("summary") or {}).get("verdict"))
    return Row(
        delay_ms,
        workers,
        wall,
        code,
        None if code == 0 else f"exit {code}, verdict {verdict}: {_last_line(stdout, stderr)}",
        verdict=verdict,
        run_seconds=run.get("duration_seconds"),
        requests=(run.get("requests") or {}).get("total"),
        chain=None if slowest is None else slowest.get("requests") or 0,
        slowest=None if slowest is None else str(slowest.get("id")),
        serial_requests=sum(c.get("requests") or 0 for c in serial),
        serial_seconds=sum(c.get("duration_seconds") or 0.0 for c in serial),
        service_ms=service_ms,
        timeline=lines,
        **_checking_window(run, checks),
    )


def _checking_window(run: dict[str, Any], checks: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds from the run's start to the first answer a check got, and from the last one to the run's
    end (start-up and cleanup), read from the answers' ``Date`` headers: to the second, no finer."""
    try:
        started = datetime.fromisoformat(run["started_at"].replace("Z", "+00:00"))
        finished = datetime.fromisoformat(run["finished_at"].replace("Z", "+00:00"))
        dates = [
            parsedate_to_datetime(value)
            for check in checks
            for exchange in check.get("exchanges") or []
            for name, value in (exchange.get("response_headers") or {}).items()
            if name.lower() == "date"
        ]
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}
    if not dates:
        return {}
    return {
        "first_answer": max(0.0, (min(dates) - started).total_seconds()),
        "after_last": max(0.0, (finished - max(dates)).total_seconds() - 1),
    }


HEADER = (
    f"{'server':>9}{'workers':>8}{'wall s':>8}{'run s':>7}{'requests':>9}  {'verdict (exit)':<15}"
    f"{'speed-up':>8}{'chain':>6}{'bound s':>8}{'wall/bound':>11}{'serial req':>11}{'serial s':>9}"
    f"{'1st answer':>11}{'after last':>11}"
)
LEGEND = """\
server: the delay per response, or 1@N ms, server-bound (one request at a time, N ms each: bound is
then requests x N, and speed-up is over that row's own 1-worker run when there is one);
wall: the command's wall time; run: the report's duration (without interpreter start-up, collection);
speed-up: the 1-worker row's wall over this one's; chain: the most requests one check sent (the report's
per-check "requests"); bound: chain x delay; serial: the serial group (checks that run one at a time, on
one worker, in a parallel run): requests and seconds summed over its checks; 1st answer, after last:
seconds from the run's start to the first answer a check got, and from the last one to the run's end
(start-up, cleanup; to the second, from the answers' Date headers)."""


def _figure(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_row(row: Row, serial: Row | None) -> str:
    """One table line; ``-`` where a figure is unknown (no report, no successful 1-worker row)."""
    speed_up = None
    if serial is not None and serial.exit_code == 0 and row.exit_code == 0:
        speed_up = serial.wall / row.wall
    bound = row.bound
    outcome = f"{row.verdict or '-'} ({row.exit_code})"
    return (
        f"{row.server:>9}{row.workers:>8}{row.wall:>8.1f}{_figure(row.run_seconds, '.1f'):>7}"
        f"{_figure(row.requests, 'd'):>9}  {outcome:<15}"
        f"{'-' if speed_up is None else f'{speed_up:.2f}x':>8}{_figure(row.chain, 'd'):>6}"
        f"{_figure(bound, '.1f'):>8}{_figure(row.wall / bound if bound else None, '.1f'):>11}"
        f"{_figure(row.serial_requests, 'd'):>11}{_figure(row.serial_seconds, '.1f'):>9}"
        f"{_figure(row.first_answer, '.0f'):>11}{_figure(row.after_last, '.0f'):>11}"
    )


def _print_timeline(row: Row) -> None:
    for line in row.timeline:
        print(f"    timeline: {line}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    delays = parser.add_mutually_exclusive_group()
    delays.add_argument(
        "--delays", type=_int_list, default=[50, 200], help="ms per response (default 50,200)"
    )
    delays.add_argument("--delay", type=int, help="one delay in ms (e.g. 100, the issue's bar)")
    parser.add_argument("--workers", type=_int_list, default=[1, 4, 8], help="worker counts (default 1,4,8)")
    parser.add_argument("--only", help="areas to run (as amp-conformance --only); default all but fuzz")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep each run's JSON report in DIR")
    parser.add_argument(
        "--service-ms",
        type=int,
        default=50,
        help="server-bound row: one request at a time, this many ms each (default 50; 0: no such row)",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="also print where each run's time went (every process's start, checks and end)",
    )
    parser.add_argument(
        "--bound-workers",
        type=_int_list,
        help="worker counts of the server-bound rows (default: the largest of --workers)",
    )
    args = parser.parse_args()
    chosen: list[int] = [args.delay] if args.delay is not None else args.delays
    worker_counts = sorted(set(args.workers))
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    if 0 in worker_counts:
        parser.error("--workers: each count must be at least 1")
    cache = tempfile.TemporaryDirectory(prefix="amp-latency-pycache-")
    _warm_bytecode(Path(cache.name))
    print(HEADER, flush=True)
    rows: list[Row] = []
    for delay_ms in chosen:
        serial: Row | None = None
        for workers in worker_counts:
            row = measure(delay_ms, workers, args.only, args.keep, timeline=args.timeline)
            rows.append(row)
            if workers == 1:
                serial = row
            print(format_row(row, serial), flush=True)
            _print_timeline(row)
            if row.problem:
                print(f"  run failed: delay {delay_ms} ms, {workers} worker(s): {row.problem}", flush=True)
    if args.service_ms > 0:
        bound_serial: Row | None = None
        for workers in sorted(set(args.bound_workers or [worker_counts[-1]])):
            row = measure(
                0, workers, args.only, args.keep, service_ms=args.service_ms, timeline=args.timeline
            )
            rows.append(row)
            if workers == 1:
                bound_serial = row
            print(format_row(row, bound_serial), flush=True)
            _print_timeline(row)
            if row.problem:
                print(f"  run failed: server-bound, {workers} worker(s): {row.problem}", flush=True)
    print(LEGEND)
    chains = {(row.chain, row.slowest) for row in rows if row.slowest is not None and not row.service_ms}
    for chain, slowest in sorted(chains):
        print(f"longest chain: {chain} requests, {slowest}")
    return 1 if any(row.problem for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
