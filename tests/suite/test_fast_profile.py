"""The capability, lifecycle, search, size and rate areas against reference servers in the profiles
that make their time-bound checks runnable (requirements.md §0.3):

* P-FAST: ``AMP_SCORING_PATCH_WINDOW_SECONDS=3``, so the window-expiry check (AMP-RATE-10) and the
  recovery half of AMP-RATE-04 run instead of skipping;
* P-NOLIMIT: ``AMP_SCORING_PATCH_LIMIT=0`` (``/spec`` says null), so AMP-RATE-11 runs.

Both run in-process (no sockets) with the scheduler off (P-QUIET, no background pass races the
lifecycle checks) and with an admin token, so the lifecycle checks run too.
"""

from __future__ import annotations

import pytest

from amp_conformance.engine.run import Run
from tests.suite.inprocess import run_against_reference

AREAS = "cap,lc,srch,size,rate,ret"

PROFILES: dict[str, dict[str, str]] = {
    "P-FAST": {"AMP_SCORING_PATCH_WINDOW_SECONDS": "3"},
    "P-NOLIMIT": {"AMP_SCORING_PATCH_LIMIT": "0"},
}
#: Checks (by the requirement they cite first) that each profile exists to make run.
MUST_RUN = {"P-FAST": ("AMP-RATE-10", "AMP-RATE-04"), "P-NOLIMIT": ("AMP-RATE-11",)}


def _run(profile: str) -> Run:
    outcome = run_against_reference(PROFILES[profile], areas=AREAS)
    assert outcome.run is not None, "the suite did not start"
    assert outcome.exit_code == 0, f"{profile}: exit {outcome.exit_code}"
    return outcome.run


@pytest.mark.slow
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_profile_runs_its_time_bound_checks_with_zero_fails(profile: str) -> None:
    run = _run(profile)
    results = list(run.results.values())
    bad = [f"{r.name}: {r.outcome}: {r.message}" for r in results if r.outcome in ("fail", "error")]
    assert not bad, f"{profile}:\n" + "\n".join(bad)
    for requirement in MUST_RUN[profile]:
        citing = [r for r in results if r.requirements[0] == requirement]
        assert citing, f"{profile}: no check cites {requirement} first"
        skipped = [f"{r.name}: {r.message}" for r in citing if r.outcome == "skip"]
        assert not skipped, f"{profile}: {requirement} did not run: {skipped}"
