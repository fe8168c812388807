"""The lifecycle engine over HTTP (AMP-LC-*, AMP-PATCH-16, AMP-READ-07, AMP-RET-01…03).

Checks whose first id belongs to another area but which need a pass (PATCH-16, PATCH-12 and
DEL-03 on a stale cell, READ-07) are filed under the lifecycle area, so ``--only lc`` runs them.

Passes are started with ``POST /lifecycle/run`` through ``amp.admin()``, so these checks need
``--admin-token`` and ``--allow-global-effects`` and skip with that reason otherwise. A pass is
store-wide, but each check judges only its own cells (fresh owner, ``decay_rate: 0`` so timing cannot
matter) and asserts "at least" on the global transition counts. Most checks judge two passes made once
per run over one owner's cells (``_lifecycle_passes``: what each pass did to which cell is recorded
there, and the cells a check changes afterwards are that check's alone). A cell's status is observed
through ``GET /memories?owner_id=…&status=…`` and never through a by-id read, which would restart its
decay clock (requirements.md §0.3). The time-bounded decay check lives in ``test_decay``.
"""

from __future__ import annotations

import time
from functools import partial

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._lifecycle_passes import (
    CELLS,
    LIFTS,
    LOW,
    both_passes,
    first_pass,
    listed_status,
    stale_probes,
    together,
)
from amp_conformance.amp01.checks._shared_cells import purge_probes, status_trio
from amp_conformance.amp01.checks._support import (
    expect_at_least,
    expect_deleted_read_of,
    expect_reads_as_deleted_of,
    expect_step,
    expect_transition_refused,
    shown,
    status_by_list,
    step_failed,
)
from amp_conformance.engine.client import Client, Reply

LOW_IMPORTANCE = 0.2
"""importance of a cell that one pass makes stale (importance x confidence < 0.3, §3 example F)."""


def _cell(amp: Amp01Context, owner: str, importance: float, confidence: float = 1.0) -> str:
    cell = amp.create_cell(
        {
            "identity": {"owner_id": owner},
            "scoring": {"importance": importance, "confidence": confidence, "decay_rate": 0},
        }
    )
    return str(cell["id"])


def _expect_listed(
    amp: Amp01Context, owner: str, cell_id: str, expected: str, when: str, requirement: str | None = None
) -> None:
    got = listed_status(amp, owner, cell_id, expected)
    amp.expect(
        got == expected,
        f"{when}: the list shows the cell as {shown(got) if got else 'absent'}, not {expected}",
        expected=expected,
        requirement=requirement,
    )


@pytest.mark.smoke
@check("AMP-LC-03", "AMP-ADMIN-05", global_effects=True)
def test_low_score_cells_become_stale_after_one_pass(amp: Amp01Context) -> None:
    """Cells with importance x confidence < 0.3 are stale after one pass; counts include them."""
    passes = first_pass(amp)
    first = passes.first
    for name in LOW:
        importance, confidence = CELLS[name]
        cell_id = passes.ids[name]
        amp.expect(
            first.status(cell_id) == "stale",
            f"after one pass, the cell with importance {importance} x confidence {confidence} is "
            f"{first.shown_as(cell_id)}, not stale",
            first.lists["stale"],
            expected="stale",
        )
    amp.expect(
        first.status(passes.ids["high"]) == "active",
        f"after one pass, the importance 0.9 cell is {first.shown_as(passes.ids['high'])}, not active",
        first.lists["active"],
        expected="active",
    )
    expect_at_least(amp, first.transitions, "active_to_stale", len(LOW))


@pytest.mark.smoke
@check("AMP-LC-04", global_effects=True)
def test_a_score_of_exactly_0_3_is_not_below_the_threshold(amp: Amp01Context) -> None:
    """A score of exactly 0.3 stays active, and brings a stale cell back to active (C-33)."""
    passes = both_passes(amp)
    first, second = passes.first, passes.after_second()
    equal = passes.ids["equal"]
    amp.expect(
        first.status(equal) == "active",
        f"importance 0.3 x confidence 1.0, decay_rate 0, after a pass: {first.shown_as(equal)}, not active",
        first.lists["active"],
        expected="active",
    )
    passes.step_lifted(amp, "x")  # stale, then lifted to exactly 0.3
    passes.step_lifted(amp, "y")  # lifted to 0.9: tells a strict threshold from no recovery at all
    passes.step_recovered(amp, "y")
    lifted = passes.ids["x"]
    amp.expect(
        second.status(lifted) == "active",
        f"a stale cell whose score is now exactly 0.3, after a pass: {second.shown_as(lifted)}, not active",
        second.lists["active"],
        expected="active",
    )


@pytest.mark.smoke
@check("AMP-LC-05", "AMP-ADMIN-05", global_effects=True)
def test_a_stale_cell_whose_score_recovers_becomes_active(amp: Amp01Context) -> None:
    """A stale cell whose score is back at or above 0.3 becomes active at the next pass."""
    passes = both_passes(amp)
    second = passes.after_second()
    passes.step_lifted(amp, "y")
    cell_id = passes.ids["y"]
    amp.expect(
        second.status(cell_id) == "active",
        f"after the next pass (importance 0.9) the cell is {second.shown_as(cell_id)}, not active",
        second.lists["active"],
        expected="active",
        requirement="AMP-LC-05",
    )
    # the pass also moved x, lifted to exactly 0.3, when it recovered: the count is judged on both
    recovered = [name for name in LIFTS if second.status(passes.ids[name]) == "active"]
    expect_at_least(amp, second.transitions, "stale_to_active", len(recovered))


@pytest.mark.smoke
@check("AMP-PATCH-16", area="lc", global_effects=True)
def test_a_scoring_patch_does_not_flip_the_status_by_itself(amp: Amp01Context) -> None:
    """A scoring PATCH that lifts a stale cell's score leaves it stale until the next pass (C-34)."""
    passes = both_passes(amp)
    passes.step_lifted(amp, "y", stays_stale=False)
    reply = passes.lifts["y"]
    status = reply.json_object().get("lifecycle", {}).get("status")
    amp.expect(
        status == "stale",
        f"the scoring PATCH flipped the status at once: the response says {shown(status)}, not stale",
        reply,
    )
    cell_id = passes.ids["y"]
    if passes.between is not None:
        listed = [c.get("id") for c in passes.between.json_object().get("results", []) if isinstance(c, dict)]
        amp.expect(
            cell_id in listed,
            "after the scoring PATCH, before any pass, the cell is not among the owner's stale cells",
            passes.between,
            expected="stale",
        )
    # the status follows at the next pass: that is the recovery rule's (AMP-LC-05), a step here
    passes.step_recovered(amp, "y")


@pytest.mark.smoke
@check("AMP-LC-07", "AMP-LC-11", global_effects=True)
def test_a_freshly_stale_cell_is_not_archived(amp: Amp01Context) -> None:
    """A pass moves a cell one step: a freshly stale cell is not archived, nor by the next pass."""
    passes = both_passes(amp)
    passes.step_stale_after_first(amp, "w")
    second = passes.after_second()
    cell_id = passes.ids["w"]
    amp.expect(
        second.status(cell_id) == "stale",
        f"a cell stale for seconds, after a second pass: {second.shown_as(cell_id)}, not stale",
        second.lists["stale"],
        expected="stale",
    )


@pytest.mark.smoke
@check("AMP-LC-08", "AMP-PATCH-12", global_effects=True)
def test_archived_cells_stay_archived(amp: Amp01Context) -> None:
    """An archived cell with a high score is left archived by a pass and cannot be PATCHed back (409)."""
    passes = first_pass(amp)
    archive = passes.archive
    if archive.status != 200:
        step_failed(amp, archive, "archiving a cell", "AMP-PATCH-10", "200")
    cell_id = passes.ids["archived"]
    first = passes.first
    amp.expect(
        first.status(cell_id) == "archived",
        f"an archived cell with importance 1.0, after a pass: {first.shown_as(cell_id)}, not archived",
        first.lists["archived"],
        expected="archived",
        requirement="AMP-LC-08",
    )
    # archived -> active only: archived -> stale is asked of test_patch.py's transition cell (AMP-PATCH-12)
    reply = amp.as_agent("a").patch(f"/memories/{cell_id}", {"lifecycle": {"status": "active"}})
    expect_transition_refused(amp, reply, "PATCH archived -> active", "AMP-PATCH-12")
    _expect_listed(amp, passes.owner, cell_id, "archived", "after the refused PATCH", "AMP-PATCH-12")


@pytest.mark.smoke
@check("AMP-PATCH-12", "AMP-DEL-03", area="lc", global_effects=True)
def test_a_stale_cell_cannot_be_patched_or_deleted_to_deleted(amp: Amp01Context) -> None:
    """A stale cell: PATCH to deleted is 409 INVALID_TRANSITION, DELETE is 409; it stays stale."""
    passes = both_passes(amp)
    passes.step_stale_after_first(amp, "z")
    passes.step_stale_after_second(amp, "z")
    # the probes are sent once (AMP-DEL-03's stale check judges the DELETE and the list after it too):
    # the DELETE first, each probe followed by the owner's stale list
    probes = stale_probes(amp, passes)
    expect_transition_refused(amp, probes.delete, "DELETE of a stale cell", "AMP-DEL-03")
    expect_transition_refused(amp, probes.patch, "PATCH stale -> deleted", "AMP-PATCH-12")
    for what, listed in (("DELETE", probes.after_delete), ("PATCH and DELETE", probes.after_patch)):
        amp.expect(
            probes.listed_stale(amp, listed),
            f"after the refused {what}: the owner's stale list does not show the cell",
            listed,
            expected="stale",
        )


@pytest.mark.smoke
@check("AMP-READ-07", area="lc", global_effects=True)
def test_a_stale_cell_can_still_be_read_by_id(amp: Amp01Context) -> None:
    """A stale cell is still readable by id: 200 with status stale."""
    passes = both_passes(amp)
    passes.step_stale_after_first(amp, "w")
    passes.step_stale_after_second(amp, "w")
    reply = amp.as_agent("a").get(f"/memories/{passes.ids['w']}")
    amp.expect_status(reply, 200, what="reading a stale cell by id")
    status = reply.json_object().get("lifecycle", {}).get("status")
    amp.expect(status == "stale", f"the read shows status stale (got {shown(status)})", reply)


@check("AMP-LC-14", global_effects=True)
def test_stale_cells_leave_default_search_and_list(amp: Amp01Context) -> None:
    """Stale cells are left out of default search (and list) and come back with include_stale or status."""
    passes = both_passes(amp)
    passes.step_stale_after_first(amp, "w")
    passes.step_stale_after_second(amp, "w")  # the list with status=stale shows it, too
    owner, cell_id = passes.owner, passes.ids["w"]
    client = amp.as_agent("a")
    query = {"query": "The user prefers Python for backend development", "owner_id": owner}

    def found(reply: Reply, what: str) -> bool:
        amp.expect_status(reply, 200, what=what)
        results = [c for c in reply.json_object().get("results", []) if isinstance(c, dict)]
        others = [c for c in results if (c.get("identity") or {}).get("owner_id") != owner]
        expect_step(
            amp,
            not others,
            f"{what}: a request for one owner's cells returned {len(others)} cell(s) of other owners",
            reply,
            step="a search or list restricted to one owner",
            requirement="AMP-SRCH-03" if "search" in what else "AMP-LIST-03",
        )
        return any(c.get("id") == cell_id for c in results)

    # the three searches and the default list are independent reads: sent at once, judged in order
    default, with_stale, stale_only, listed = together(
        amp,
        [
            partial(client.post, "/memories/search", query),
            partial(client.post, "/memories/search", {**query, "include_stale": True}),
            partial(client.post, "/memories/search", {**query, "status": ["stale"]}),
            partial(client.get, "/memories", params={"owner_id": owner}),
        ],
    )
    # AMP-LC-14 restates the search rules: each finding is filed under the rule it breaks
    amp.expect(
        not found(default, "default search"),
        "default search returns the stale cell",
        requirement="AMP-SRCH-05",
    )
    if not found(with_stale, "search, include_stale"):
        _expect_search_complete(amp, client, owner, with_stale, cell_id)
        amp.fail(
            "search with include_stale: true leaves the stale cell out", with_stale, requirement="AMP-SRCH-06"
        )
    amp.expect(
        found(stale_only, 'search, status ["stale"]'),
        'search with status ["stale"] leaves the stale cell out',
        requirement="AMP-SRCH-07",
    )
    if found(listed, "default list"):
        amp.warn("the default list shows a stale cell (AMP-LIST-04 and C-12: only active by default)")


def _expect_search_complete(
    amp: Amp01Context, client: Client, owner: str, reply: Reply, stale_id: str
) -> None:
    """Before the missing stale cell is judged a filter's fault: the search returned every active cell
    of the owner (the list with status=active shows them; include_stale adds to those). Active cells
    missing too means the search loses results (an approximate index), one root cause under
    AMP-SRCH-01, not a wrong include_stale."""
    expected: set[str] = set()
    listed = client.get("/memories", params={"owner_id": owner, "status": "active"})
    if listed.status == 200:
        body = listed.json_object()
        expected = {c["id"] for c in body.get("results", []) if isinstance(c, dict) and "id" in c}
    got = {c.get("id") for c in reply.json_object().get("results", []) if isinstance(c, dict)}
    missing = sorted(expected - got - {stale_id})
    expect_step(
        amp,
        not missing,
        f"search, include_stale: results missing: {len(missing)} active cell(s) of the owner that the list "
        f"shows are not returned either ({missing[:3]}), so include_stale cannot be judged on it",
        reply,
        step="a search returning every matching cell the caller may read",
        requirement="AMP-SRCH-01",
    )


@pytest.mark.smoke
@check("AMP-LC-09", "AMP-RET-01", global_effects=True)
def test_a_pass_leaves_deleted_cells_deleted_and_kept(amp: Amp01Context) -> None:
    """A deleted cell (high score) is neither changed nor purged by a pass (where deleted cells read back)."""
    amp.admin()
    if amp.conventions.deleted_read != "readable":
        amp.skip(
            "the server answers deleted ids like unknown ones (C-05), so a pass's effect on them is not "
            "observable over HTTP (requirements.md: NOT-BB)"
        )
    passes = first_pass(amp)
    cell_id = passes.step_deleted(amp)
    reply = amp.as_agent("a").get(f"/memories/{cell_id}")
    amp.expect_status(
        reply, 200, what="reading the deleted cell after a pass (it is kept for retention_days)"
    )
    status = reply.json_object().get("lifecycle", {}).get("status")
    amp.expect(
        status == "deleted", f"the deleted cell is still deleted after a pass (got {shown(status)})", reply
    )


@pytest.mark.smoke
@check("AMP-RET-02")
def test_no_rest_route_purges_a_deleted_cell(amp: Amp01Context) -> None:
    """Physical purge is no REST operation: purge-looking requests never succeed on a deleted cell."""
    # the run's shared deleted cell: its purge probes (one of each form a purge route takes, at once)
    # were sent with it, after every other probe and the read that followed them
    made, replies = status_trio(amp)
    amp.archived_step(replies[made["archive"]])
    amp.deleted_step(replies[made["delete"]])
    step = "reading the deleted cell before the purge probes"
    expect_reads_as_deleted_of(amp, replies[made["read after undo"]], step)
    for (method, path, params), at in zip(purge_probes(made["gone"]), made["purges"], strict=True):
        reply = replies[at]
        amp.expect(
            not 200 <= reply.status < 300,
            f"{method} {path}{'?' + next(iter(params)) + '=true' if params else ''} answered {reply.status}: "
            "no REST route may purge a cell",
            reply,
            expected="a 4xx (404/405 for routes that do not exist)",
        )
    what = "reading the deleted cell after the purge probes"
    expect_deleted_read_of(amp, replies[made["read after purges"]], what)


@check("AMP-RET-03", "AMP-ADMIN-07", global_effects=True)
def test_a_pass_purges_nothing_by_default(amp: Amp01Context) -> None:
    """A pass reports purged (if at all) as an integer >= 0; it purges nothing unless the operator opts in."""
    reply = first_pass(amp).first.reply
    body = reply.json_object()
    if "purged" not in body:
        amp.note("the pass reports no 'purged' count (C-14: optional)")
        return
    purged = body["purged"]
    amp.expect(
        isinstance(purged, int) and not isinstance(purged, bool) and purged >= 0,
        f"purged is an integer >= 0 (got {shown(purged)})",
        reply,
    )
    if purged:
        amp.warn(
            f"the pass purged {purged} cells: compliant only if the operator opted in (AMP-RET-03)", reply
        )


@check("AMP-LC-13")
def test_no_automatic_pass_when_the_scheduler_is_off(amp: Amp01Context) -> None:
    """With lifecycle_scheduler.enabled false, a low-score cell stays active (no pass runs by itself)."""
    scheduler = amp.spec.get("lifecycle_scheduler")
    if not isinstance(scheduler, dict) or scheduler.get("enabled") is not False:
        amp.skip(
            "the scheduler is not advertised as disabled "
            "(on the reference server: AMP_LIFECYCLE_ENABLED=false)"
        )
    owner = amp.owner()
    cell_id = _cell(amp, owner, LOW_IMPORTANCE)
    time.sleep(1.0)
    _expect_listed(amp, owner, cell_id, "active", "a low-score cell one second later, with the scheduler off")


@pytest.mark.smoke
@check("AMP-LC-12", deadline=60)
def test_the_scheduler_runs_passes_by_itself(amp: Amp01Context) -> None:
    """With the scheduler on and a short interval, a low-score cell turns stale without a manual pass."""
    scheduler = amp.spec.get("lifecycle_scheduler")
    if not isinstance(scheduler, dict) or scheduler.get("enabled") is not True:
        amp.skip("the scheduler is not advertised as enabled")
    interval = scheduler.get("interval_seconds")
    if not isinstance(interval, int) or isinstance(interval, bool) or interval > 15:
        amp.skip(
            f"interval_seconds is {shown(interval)}: waiting for a scheduled pass needs an interval "
            "of at most 15 s (on the reference server, e.g. AMP_LIFECYCLE_INTERVAL_SECONDS=10)"
        )
    owner = amp.owner()
    cell_id = _cell(amp, owner, LOW_IMPORTANCE)
    until = time.monotonic() + 2 * interval + 1
    while time.monotonic() < until:
        if status_by_list(amp, owner, cell_id) == "stale":
            return
        time.sleep(0.5)
    _expect_listed(
        amp, owner, cell_id, "stale", f"{2 * interval + 1} s later (scheduler interval {interval} s)"
    )
