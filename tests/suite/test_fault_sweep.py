"""The fault sweep (issue 10's first bar): every reference-server fault, a whole ``--no-fuzz`` run each.

For each fault exactly its root-cause requirement fails (the run exits 1, every ``fail`` is about
that id), no check errors, and every check that a broken step stopped is ``blocked`` under that same
id, not failed. One matrix line per fault is printed. ``benchmarks/fault_sweep.py`` prints the same
table without pytest, with timings.

A run spends about half its time in the time-bound checks' sleeps (decay, rate window, lifecycle), so
the selected faults run in a few worker processes at once: ``AMP_SWEEP_WORKERS`` (default: cores + 1).
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reference_server import FAULTS
from tests.suite.inprocess import run_against_reference, write_keys_file

#: Faults only unusual input reaches: the fuzz area's business (tests/suite/test_fuzz_area.py).
FUZZ_ONLY = frozenset({"nonascii-session-500", "huge-integer-500", "deep-metadata-500"})

#: Server set-ups a fault needs to show (keys mode, no admin token, a short rate window).
PROFILES: dict[str, dict[str, Any]] = {
    "keys-body-created-by": {"keys": True},
    "keys-distinct-errors": {"keys": True},
    "keys-spec-closed": {"keys": True},
    "admin-open-when-disabled": {"admin": False},
    "rate-never-forgets": {"env": {"AMP_SCORING_PATCH_WINDOW_SECONDS": "3"}},
    "rate-counts-refused": {"env": {"AMP_SCORING_PATCH_WINDOW_SECONDS": "3"}},
}

#: Faults that genuinely break a second requirement besides their declared one, each with the reason:
#: single-rooting them would need a check to stop judging a rule the fault does break.
ALSO_BREAKS: dict[str, dict[str, str]] = {
    "has-more-always-false": {
        "AMP-SRCH-11": "the fault answers has_more false on search as well as on list (AMP-LIST-08)",
    },
    "limit-clamped": {
        "AMP-SRCH-09": "the fault clamps a too-large limit on search as well as on list (AMP-LIST-05)",
    },
    "wildcard-substring": {
        "AMP-ACL-06": "substring matching also lets a pattern without '*' match inside a longer id, "
        "which breaks the whole-id rule of exact patterns",
    },
    "rate-counts-non-scoring": {
        "AMP-RATE-06": 'every PATCH counts, so {"scoring": null} (AMP-RATE-06) is counted as well as '
        "the PATCHes without scoring (AMP-RATE-05)",
    },
    "owner-filter-folded": {
        "AMP-SRCH-03": "the folded owner_id filter is search's as well as list's (AMP-LIST-03)",
    },
    "media-type-parameter-refused": {
        "AMP-PATCH-01": "the parameter is refused on PATCH as well as on create (AMP-CRE-01)",
        "AMP-SRCH-01": "the parameter is refused on search as well as on create (AMP-CRE-01)",
    },
    "forbidden-patch-writes": {
        "AMP-ACL-13": "the stranger's PATCH that names itself as identity.created_by is written too, so "
        "the body did raise the caller's rights (AMP-ACL-02 is the refused write itself)",
    },
    "health-version-mismatch": {
        "AMP-HEALTH-01": "/health reports 0.2.0: wrong by itself (AMP-HEALTH-01 wants 0.1.0) and "
        "disagreeing with /spec (AMP-CAP-03)",
    },
}

#: Faults that break a SHOULD, each with the reason: the bar is then a passing run (exit 0) in which
#: the fault's requirement warns and nothing fails.
WARNS: dict[str, str] = {
    "retry-after-fixed": "AMP-RATE-03 (the wait is the time left in the window) is a SHOULD (inferred)",
    "scalar-body-500": "AMP-CRE-10 (422 for a body that is not a JSON object) is a SHOULD (inferred)",
}

#: Faults whose attribution needs a change outside the checks this sweep's fixes own; strict, so the
#: entry must go once the change lands (the test then passes unexpectedly and fails).
NOT_YET: dict[str, str] = {}

#: Faults only a store grown past the full tier's reaches: the stress tier's (tests/suite/test_tiers.py).
STRESS_ONLY = frozenset({"search-index-drops-beyond-n"})

SWEPT = tuple(sorted(set(FAULTS) - FUZZ_ONLY - STRESS_ONLY))


@dataclass(frozen=True)
class Outcome:
    """One check's outcome in a fault's run (picklable, unlike the run's results)."""

    name: str
    outcome: str
    finding_requirements: tuple[str, ...]
    blocked_by: str | None
    message: str
    duration: float


@dataclass
class Sweep:
    """What one fault's run showed."""

    fault: str
    requirement: str
    exit_code: int
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failing(self) -> dict[str, list[str]]:
        """Requirement id -> names of the checks whose failure is about it."""
        found: dict[str, list[str]] = {}
        for result in self.outcomes:
            if result.outcome == "fail":
                for rid in result.finding_requirements:
                    found.setdefault(rid, []).append(result.name)
        return found

    @property
    def blocked(self) -> Counter[str]:
        """Root-cause id -> how many checks are blocked under it."""
        return Counter(r.blocked_by or "?" for r in self.outcomes if r.outcome == "blocked")

    @property
    def errors(self) -> list[str]:
        return [f"{r.name}: {r.message}" for r in self.outcomes if r.outcome == "error"]

    @property
    def warning(self) -> dict[str, list[str]]:
        """Requirement id -> names of the checks that warn about it."""
        found: dict[str, list[str]] = {}
        for result in self.outcomes:
            if result.outcome == "warn":
                for rid in result.finding_requirements:
                    found.setdefault(rid, []).append(result.name)
        return found

    def problems(self) -> list[str]:
        """Why the bar does not hold for this fault (empty when it does)."""
        if self.fault in WARNS:
            found = [] if self.exit_code == 0 else [f"exit {self.exit_code}, not 0 (a SHOULD fault)"]
            if self.requirement not in self.warning:
                found.append(f"{self.requirement} does not warn")
            found += [f"{rid} fails ({', '.join(names)})" for rid, names in self.failing.items()]
            return found + [f"error: {e}" for e in self.errors]
        allowed = {self.requirement, *ALSO_BREAKS.get(self.fault, {})}
        found = []
        if self.exit_code != 1:
            found.append(f"exit {self.exit_code}, not 1")
        failing = self.failing
        if self.requirement not in failing:
            found.append(f"{self.requirement} does not fail")
        found += [
            f"{rid} fails too ({', '.join(names)})" for rid, names in failing.items() if rid not in allowed
        ]
        found += [f"{n} blocked under {rid}" for rid, n in self.blocked.items() if rid not in allowed]
        found += [f"error: {e}" for e in self.errors]
        return found

    def line(self) -> str:
        """One matrix row: OK/BAD, fault, requirement, exit, failing ids with checks, blocked, errors."""
        failing = "; ".join(f"{rid} by {','.join(names)}" for rid, names in sorted(self.failing.items()))
        blocked = ", ".join(f"{rid} x{n}" for rid, n in sorted(self.blocked.items()))
        verdict = "BAD" if self.problems() else "OK "
        label = "fails"
        if self.fault in WARNS:  # a SHOULD fault: its row shows the warnings (and any failure is BAD)
            label = "warns"
            failing = "; ".join(f"{rid} by {','.join(n)}" for rid, n in sorted(self.warning.items()))
        return (
            f"{verdict} {self.fault:<30} {self.requirement:<13} exit {self.exit_code}  "
            f"{label}: {failing or '-'}  blocked: {blocked or '-'}  errors: {len(self.errors)}"
        )


def sweep(fault: str) -> Sweep:
    """A whole ``--no-fuzz`` run against the reference server with ``fault`` on, in its profile."""
    started = time.perf_counter()
    profile = PROFILES.get(fault, {})
    env = {"AMP_REFERENCE_FAULTS": fault, **profile.get("env", {})}
    keys = bool(profile.get("keys"))
    with tempfile.TemporaryDirectory() as directory, contextlib.redirect_stdout(io.StringIO()):
        if keys:
            env["AMP_API_KEYS_FILE"] = str(write_keys_file(Path(directory)))
        outcome = run_against_reference(env, admin=profile.get("admin", True), keys=keys)
    results = outcome.run.results.values() if outcome.run is not None else ()
    outcomes = [
        Outcome(
            r.name,
            r.outcome,
            tuple(r.finding_requirements),
            str(r.blocked_by.get("requirement")) if r.blocked_by else None,
            r.message,
            r.duration,
        )
        for r in results
    ]
    return Sweep(fault, FAULTS[fault].requirement, outcome.exit_code, outcomes, time.perf_counter() - started)


def workers() -> int:
    """How many faults run at once (``AMP_SWEEP_WORKERS``; default: cores + 1, the sleeps overlap)."""
    configured = os.environ.get("AMP_SWEEP_WORKERS", "")
    return int(configured) if configured.isdigit() and int(configured) > 0 else (os.cpu_count() or 1) + 1


def sweep_all(faults: Iterable[str], jobs: int | None = None) -> Iterable[Sweep]:
    """:func:`sweep` of each fault, ``jobs`` at a time in fresh worker processes, in order."""
    faults = list(faults)
    jobs = min(jobs or workers(), len(faults)) or 1
    if jobs == 1:
        yield from map(sweep, faults)
        return
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield from pool.map(sweep, faults)


@pytest.fixture(scope="module")
def swept(request: pytest.FixtureRequest) -> dict[str, Sweep]:
    """The sweeps of every fault this session selected, run together (see :func:`workers`)."""
    selected = [
        str(item.callspec.params["fault"])
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and hasattr(item, "callspec")
        and "fault" in item.callspec.params
        and item.module is request.module
    ]
    return {found.fault: found for found in sweep_all(selected)}


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(f, marks=pytest.mark.xfail(reason=NOT_YET[f], strict=True)) if f in NOT_YET else f
        for f in SWEPT
    ],
)
def test_fault_fails_its_root_cause_only(
    fault: str, swept: dict[str, Sweep], capsys: pytest.CaptureFixture[str]
) -> None:
    found = swept[fault]
    with capsys.disabled():
        print(f"\n  {found.line()}")
    assert found.outcomes, f"{fault}: the suite did not run"
    assert not found.problems(), f"{fault}: " + "; ".join(found.problems())


def test_every_fault_is_swept_or_left_to_the_fuzz_area() -> None:
    assert set(FAULTS) >= FUZZ_ONLY, f"unknown fuzz-only faults: {sorted(FUZZ_ONLY - set(FAULTS))}"
    assert set(FAULTS) >= STRESS_ONLY, f"unknown stress-only faults: {sorted(STRESS_ONLY - set(FAULTS))}"
    assert set(PROFILES) <= set(SWEPT) and set(ALSO_BREAKS) <= set(SWEPT) and set(NOT_YET) <= set(SWEPT)
    assert set(WARNS) <= set(SWEPT) and all(WARNS.values())
    assert all(reasons and all(reasons.values()) for reasons in ALSO_BREAKS.values())
