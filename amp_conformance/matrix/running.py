"""Run a matrix: one ordinary ``amp-conformance`` process per implementation, a few at a time.

Each run is exactly the command :func:`printable_command` shows (started in the implementations
file's folder) and writes its ordinary JSON report; a run that cannot start (exit 2 and no report) is a
:class:`RunResult` that says why, never an aborted matrix.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amp_conformance.engine.report_model import Report
from amp_conformance.matrix.config import Implementation, MatrixConfig

#: Lines of a run's log kept when it could not start.
LOG_TAIL_LINES = 20


@dataclass(frozen=True)
class RunOptions:
    """What applies to every implementation of the matrix."""

    only: str | None = None
    level: str | None = None
    no_fuzz: bool = False

    def public(self) -> dict[str, Any]:
        return {"only": self.only, "level": self.level, "fuzz": not self.no_fuzz}


@dataclass
class RunResult:
    implementation: Implementation
    command: str
    exit_code: int
    duration_seconds: float
    report_path: Path
    log_path: Path
    report: Report | None
    problem: str | None

    @property
    def started(self) -> bool:
        return self.report is not None


def _variable(*words: str) -> str:
    return "AMP_" + "_".join(re.sub(r"[^A-Z0-9]", "_", word.upper()) for word in words)


#: Protocol options named so hold secrets (an admin token, API keys): printed commands show them as
#: shell variables, as curl lines do.
SECRET_OPTION = re.compile(r"(token|key|secret|password)$")


def suite_arguments(impl: Implementation, options: RunOptions, json_path: Path) -> list[str]:
    """The ``amp-conformance`` arguments of one implementation's run."""
    args = ["--protocol", impl.protocol]
    for kind, target in impl.targets.items():
        # {python}: the interpreter running the matrix (so a file works from any virtual environment)
        args += [f"--{kind}", target.replace("{python}", shlex.quote(sys.executable))]
    for name, value in impl.options.items():
        if value is True:
            args.append(f"--{name}")
        elif isinstance(value, list):
            for item in value:
                args += [f"--{name}", str(item)]
        elif value is not False and value is not None:
            args += [f"--{name}", str(value)]
    if impl.expectations:
        args += ["--expectations", impl.expectations]
    if impl.startup_timeout is not None:
        args += ["--startup-timeout", f"{impl.startup_timeout:g}"]
    only = _own_areas(options.only, impl.protocol) if options.only else None
    if only:
        args += ["--only", only]
    if options.level:
        args += ["--level", options.level]
    if options.no_fuzz:
        args.append("--no-fuzz")
    return [*args, "--json", str(json_path), "-q"]


def _own_areas(only: str, protocol: str) -> str:
    """The names of ``--only`` this implementation's protocol knows (a matrix may mix protocols whose
    areas differ; the matrix checked that each name is some protocol's)."""
    from amp_conformance.engine import registry

    catalogue = registry.get(protocol).catalogue
    known = {*catalogue.areas, *catalogue.aliases}
    own = [name.strip() for name in only.split(",") if name.strip().lower() in known]
    return ",".join(own) if own else "__none__"


def secrets_of(impl: Implementation) -> dict[str, str]:
    """Secret value -> the shell variable a printed command shows instead (as curl lines do)."""
    found: dict[str, str] = {}
    for name, value in impl.options.items():
        if not SECRET_OPTION.search(name):
            continue
        if isinstance(value, str) and value:
            found.setdefault(value, _variable(name))
        for item in value if isinstance(value, list) else []:
            agent, _, secret = str(item).partition("=")
            if secret:
                found.setdefault(secret, _variable(name, agent))
    return found


def _shell_word(word: str, secrets: dict[str, str]) -> str:
    """``word`` quoted for a POSIX shell, each secret in it shown as ``$VARIABLE``."""
    hits = [s for s in secrets if s and s in word]
    if not hits:
        return shlex.quote(word)
    escaped = re.sub(r'(["\\$`])', r"\\\1", word)
    for secret in sorted(hits, key=len, reverse=True):
        escaped = escaped.replace(re.sub(r'(["\\$`])', r"\\\1", secret), "${" + secrets[secret] + "}")
    return f'"{escaped}"'


def printable_command(impl: Implementation, config: MatrixConfig, args: list[str]) -> str:
    """The command a person runs to reproduce this column alone (secrets as shell variables)."""
    secrets = secrets_of(impl)
    # NAME=value: the name stays a bare word, or the shell runs the quoted pair as a command (rc 127)
    env = " ".join(f"{k}={_shell_word(v, secrets)}" for k, v in impl.environment.items())
    words = " ".join(_shell_word(arg, secrets) for arg in args)
    prefix = f"{env} " if env else ""
    return f"cd {shlex.quote(str(config.directory))} && {prefix}amp-conformance {words}"


def _problem(log: str, exit_code: int) -> str:
    lines = [line for line in log.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("amp-conformance")]
    if said:
        return said[-1]
    return lines[-1] if lines else f"amp-conformance exited {exit_code} and wrote no report"


def _read_report(path: Path) -> tuple[Report | None, str | None]:
    """The run's report, validated once (None and why, when it wrote none or an unreadable one)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None, None
    except UnicodeDecodeError as exc:  # a run cut off mid-write
        return None, f"{path.name} is not UTF-8 text ({exc.reason} at byte {exc.start})"
    try:
        return Report.from_json(json.loads(text)), None
    except ValueError as exc:  # ReportError is one
        return None, f"{path.name} {exc}"


class MatrixInterrupted(Exception):
    """A signal ended the matrix: no implementation was started after it, the running ones got it
    and ended (``results``: those that ran), and there is no matrix verdict (exit 2)."""

    def __init__(self, signum: int, results: list[RunResult], not_started: int) -> None:
        self.signum, self.results, self.not_started = signum, results, not_started
        name = signal.Signals(signum).name
        super().__init__(
            f"interrupted ({name}): {len(results)} implementation(s) ended, {not_started} not started; "
            "INCOMPLETE, no matrix verdict"
        )


class _Interrupts:
    """The matrix's runs and the signal that ends them: a signal is passed on to every running child
    (SIGTERM reaches the matrix alone, Ctrl-C the whole process group) and no run starts after it."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.running: set[subprocess.Popen[bytes]] = set()
        self.lock = threading.Lock()

    def handle(self, signum: int, _frame: object) -> None:
        first = self.signum is None
        self.signum = self.signum or signum
        if first:
            for child in list(self.running):
                with contextlib.suppress(OSError):
                    child.send_signal(signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        previous: dict[int, Any] = {}
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(ValueError, OSError):  # not the main thread: leave signals alone
                previous[sig] = signal.signal(sig, self.handle)
        try:
            yield
        finally:
            for number, old in previous.items():
                signal.signal(number, old)

    def start(self, command: list[str], **kwargs: Any) -> subprocess.Popen[bytes] | None:
        """The child, or None once interrupted (checked under the lock the handler's list is read
        from, so a child started as the signal arrives still gets it)."""
        with self.lock:
            if self.signum is not None:
                return None
            child = subprocess.Popen(command, **kwargs)
            self.running.add(child)
        if self.signum is not None:  # the signal came while it started
            with contextlib.suppress(OSError):
                child.send_signal(self.signum)
        return child


def run_one(
    impl: Implementation,
    config: MatrixConfig,
    options: RunOptions,
    reports: Path,
    interrupts: _Interrupts | None = None,
) -> RunResult | None:
    """Run one implementation (blocking) and read what it wrote (None: not started, interrupted)."""
    report_path, log_path = reports / f"{impl.slug}.json", reports / f"{impl.slug}.log"
    report_path.unlink(missing_ok=True)
    args = suite_arguments(impl, options, report_path.resolve())
    env = {**os.environ, **impl.environment}
    env.pop("GITHUB_STEP_SUMMARY", None)  # N runs would each append a summary to the job's page
    started = time.monotonic()
    interrupts = interrupts or _Interrupts()
    with log_path.open("w", encoding="utf-8") as log:
        child = interrupts.start(
            [sys.executable, "-m", "amp_conformance", *args],
            cwd=config.directory,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        if child is None:
            return None
        try:
            returncode = child.wait()
        finally:
            interrupts.running.discard(child)
    duration = time.monotonic() - started
    report, problem = _read_report(report_path)
    if report is None and problem is None:
        text = log_path.read_text(encoding="utf-8", errors="replace")
        problem = _problem(text, returncode)
    return RunResult(
        implementation=impl,
        command=printable_command(impl, config, args),
        exit_code=returncode,
        duration_seconds=round(duration, 3),
        report_path=report_path,
        log_path=log_path,
        report=report,
        problem=problem,
    )


def log_tail(result: RunResult) -> str:
    try:
        lines = result.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL_LINES:])


def run_matrix(
    config: MatrixConfig,
    options: RunOptions,
    reports: Path,
    *,
    jobs: int = 2,
    on_start: Callable[[Implementation, str], None] | None = None,
    on_done: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Every implementation's run, at most ``jobs`` at a time; results in the file's order.
    MatrixInterrupted once the running ones ended, after SIGINT, SIGTERM or SIGHUP."""
    reports.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()
    interrupts = _Interrupts()

    def job(impl: Implementation) -> RunResult | None:
        if interrupts.signum is not None:
            return None
        if on_start is not None:
            args = suite_arguments(impl, options, (reports / f"{impl.slug}.json").resolve())
            with lock:
                on_start(impl, printable_command(impl, config, args))
        result = run_one(impl, config, options, reports, interrupts)
        if on_done is not None and result is not None:
            with lock:
                on_done(result)
        return result

    with interrupts.installed():
        with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="amp-matrix") as pool:
            futures = [pool.submit(job, impl) for impl in config.implementations]
            wait(futures)  # interruptible: the handler runs while the main thread waits here
        results = [future.result() for future in futures]
    ran = [result for result in results if result is not None]
    if interrupts.signum is not None:
        raise MatrixInterrupted(interrupts.signum, ran, len(results) - len(ran))
    return ran
