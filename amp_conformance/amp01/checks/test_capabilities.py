"""Capability claims of ``GET /spec`` checked against behaviour (AMP-CAP-02, AMP-CAP-04…12).

Every number comes from the server's own ``/spec`` (AMP-CAP-04): a claim that is absent skips the
behaviour check with a reason, a claim that behaviour contradicts fails. The size and rate claims
(AMP-CAP-07, AMP-CAP-08) are held to their boundaries in ``test_size`` and ``test_rate``;
AMP-CAP-01 and AMP-CAP-03 live in ``test_health``.
"""

from __future__ import annotations

from functools import partial
from typing import Any, TypeGuard

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._lifecycle_passes import together
from amp_conformance.amp01.checks._shared_cells import (
    fresh_owner_list,
    invalid_list,
    owner_set,
    owner_set_page,
    owner_set_search,
    public_cell,
)
from amp_conformance.amp01.checks._shared_probes import admin_probes_made
from amp_conformance.amp01.checks._support import (
    about,
    expect_error,
    expect_refused_as_invalid,
    open_route_reply,
    shown,
    skip_if_admin_token_refused,
)
from amp_conformance.engine.client import Reply

CAPABILITY_MEMBERS = (
    "mcp_compatible",
    "storage_backends",
    "api_keys_required",
    "scoring_patch_limit",
    "embedding",
    "max_cell_size_bytes",
    "retention_days",
    "lifecycle_scheduler",
)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _capability_problems(caps: dict[str, Any]) -> list[str]:
    """Type problems of the documented capability members (AMP-CAP-02); ``max_page_size`` aside."""
    problems: list[str] = []
    missing = [name for name in CAPABILITY_MEMBERS if name not in caps]
    if missing:
        problems.append(f"missing member(s): {', '.join(missing)}")
    if "mcp_compatible" in caps and not isinstance(caps["mcp_compatible"], bool):
        problems.append(f"mcp_compatible is not a boolean: {shown(caps['mcp_compatible'])}")
    if "storage_backends" in caps:
        backends = caps["storage_backends"]
        if not (isinstance(backends, list) and backends and all(isinstance(b, str) for b in backends)):
            problems.append(f"storage_backends is not a non-empty array of strings: {shown(backends)}")
    if "api_keys_required" in caps and not isinstance(caps["api_keys_required"], bool):
        problems.append(f"api_keys_required is not a boolean: {shown(caps['api_keys_required'])}")
    if "scoring_patch_limit" in caps and caps["scoring_patch_limit"] is not None:
        limit = caps["scoring_patch_limit"]
        if not isinstance(limit, dict):
            problems.append(f"scoring_patch_limit is neither null nor an object: {shown(limit)}")
        else:
            for name in ("max_patches", "window_seconds"):
                if not (_is_int(limit.get(name)) and limit[name] > 0):
                    problems.append(
                        f"scoring_patch_limit.{name} is not an integer > 0: {shown(limit.get(name))}"
                    )
    if "embedding" in caps and caps["embedding"] is not None:
        embedding = caps["embedding"]
        if not isinstance(embedding, dict):
            problems.append(f"embedding is neither null nor an object: {shown(embedding)}")
        else:
            if not isinstance(embedding.get("provider"), str):
                problems.append(f"embedding.provider is not a string: {shown(embedding.get('provider'))}")
            dimensions = embedding.get("dimensions", "missing")
            if dimensions is not None and not _is_int(dimensions):
                problems.append(f"embedding.dimensions is neither an integer nor null: {shown(dimensions)}")
    if "max_cell_size_bytes" in caps and not (
        _is_int(caps["max_cell_size_bytes"]) and caps["max_cell_size_bytes"] > 0
    ):
        problems.append(f"max_cell_size_bytes is not an integer > 0: {shown(caps['max_cell_size_bytes'])}")
    if "retention_days" in caps and not _is_int(caps["retention_days"]):
        problems.append(f"retention_days is not an integer: {shown(caps['retention_days'])}")
    if "lifecycle_scheduler" in caps:
        scheduler = caps["lifecycle_scheduler"]
        if not isinstance(scheduler, dict):
            problems.append(f"lifecycle_scheduler is not an object: {shown(scheduler)}")
        else:
            if not isinstance(scheduler.get("enabled"), bool):
                problems.append(
                    f"lifecycle_scheduler.enabled is not a boolean: {shown(scheduler.get('enabled'))}"
                )
            interval = scheduler.get("interval_seconds")
            if not (_is_int(interval) and interval > 0):
                problems.append(
                    f"lifecycle_scheduler.interval_seconds is not an integer > 0: {shown(interval)}"
                )
            if not isinstance(scheduler.get("manual_run_endpoint"), str):
                problems.append(
                    "lifecycle_scheduler.manual_run_endpoint is not a string: "
                    f"{shown(scheduler.get('manual_run_endpoint'))}"
                )
    return problems


def _spec_reply(amp: Amp01Context, *, fresh: bool = False) -> Reply:
    """An anonymous GET /spec: the run's shared one, or with ``fresh`` one sent now."""
    reply = amp.anonymous().get("/spec") if fresh else open_route_reply(amp, "/spec")
    amp.expect_status(reply, 200, what="GET /spec")
    return reply


def _page_size_claim(amp: Amp01Context) -> int:
    value = amp.spec.get("max_page_size")
    if value is None:
        amp.skip(
            "/spec makes no max_page_size claim (C-13): the documented ceiling 100 is checked by SRCH-09"
        )
    if not (_is_int(value) and value > 0):
        amp.skip(f"/spec max_page_size {shown(value)} is not a usable number (AMP-CAP-02 reports it)")
    assert isinstance(value, int)
    return value


@pytest.mark.smoke
@check("AMP-CAP-02")
def test_spec_capabilities_have_the_documented_members_and_types(amp: Amp01Context) -> None:
    """/spec capabilities carry every documented member with its documented type."""
    reply = _spec_reply(amp)
    caps = reply.json_object().get("capabilities")
    amp.expect(isinstance(caps, dict), "capabilities is an object", reply)
    assert isinstance(caps, dict)
    problems = _capability_problems(caps)
    amp.expect(not problems, "capabilities: " + "; ".join(problems), reply)
    page = caps.get("max_page_size")
    if page is None:
        amp.warn("capabilities has no max_page_size (C-13): the suite assumes 100", reply)
    elif not (_is_int(page) and page > 0):
        amp.fail(f"max_page_size is not an integer > 0: {shown(page)}", reply)


@pytest.mark.smoke
@check("AMP-CAP-05", "AMP-CAP-04")
def test_api_keys_required_matches_behaviour(amp: Amp01Context) -> None:
    """api_keys_required matches behaviour: false serves agents without a key, true answers 401."""
    claim = amp.spec.get("api_keys_required")
    if not isinstance(claim, bool):
        amp.skip(f"/spec makes no usable api_keys_required claim ({shown(claim)})")
    owner = amp.owner()
    keyless = amp.with_headers({"X-AMP-Agent-ID": amp.agent_id("a")})
    if claim and amp.keys_mode:  # the run's shared list naming "a" without its key (test_auth's too)
        reply = public_cell(amp)[1]["list without key"]
    else:
        reply = keyless.get("/memories", params={"owner_id": owner})
    if claim:
        expect_error(amp, reply, 401, "UNAUTHENTICATED")
        if amp.keys_mode:
            # agent "a"'s keyed list of a fresh owner: the run's shared one (test_list judges its
            # default window); with keys "a" is the first keyed agent in every worker
            keyed = fresh_owner_list(amp)
            amp.expect_status(keyed, 200, what="the same list with the agent's key")
        else:
            amp.note("api_keys_required is true and no --api-key was given: most checks cannot run")
    else:
        amp.expect_status(reply, 200, what="api_keys_required is false, so a list without a key")


@pytest.mark.smoke
@check("AMP-CAP-06", "AMP-CAP-04", "AMP-SRCH-09", "AMP-LIST-05")
def test_max_page_size_is_the_exact_ceiling_on_search_and_list(amp: Amp01Context) -> None:
    """limit = max_page_size is accepted and echoed on search and list; max_page_size + 1 is a 422."""
    ceiling = _page_size_claim(amp)
    # the run's shared pages and searches asking these limits (test_list's and test_search's limit
    # checks judge the same answers): the owner set's page and search at the ceiling, the search one
    # over it, and a fresh owner's list one over it
    at_limit = owner_set_page(amp, owner_set(amp)["owner"], role="a", limit=ceiling)
    amp.expect_status(at_limit, 200, what=f"list with limit = max_page_size ({ceiling})")
    echoed = at_limit.json_object().get("limit")
    amp.expect(echoed == ceiling, f"list echoes limit {ceiling} (got {shown(echoed)})", at_limit)
    over = invalid_list(amp, limit=ceiling + 1)
    with about("AMP-LIST-05"):
        expect_refused_as_invalid(amp, over)
    at_limit = owner_set_search(amp, limit=ceiling)[1]
    amp.expect_status(at_limit, 200, what=f"search with limit = max_page_size ({ceiling})")
    echoed = at_limit.json_object().get("limit")
    amp.expect(echoed == ceiling, f"search echoes limit {ceiling} (got {shown(echoed)})", at_limit)
    over = owner_set_search(amp, limit=ceiling + 1)[1]
    with about("AMP-SRCH-09"):
        expect_refused_as_invalid(amp, over)


@pytest.mark.smoke
@check("AMP-CAP-09")
def test_retention_days_is_at_least_30(amp: Amp01Context) -> None:
    """retention_days is an integer of at least 30 (the spec's floor)."""
    if "retention_days" not in amp.spec:
        amp.skip("/spec makes no retention_days claim (AMP-CAP-02 reports the missing member)")
    days = amp.spec["retention_days"]
    amp.expect(_is_int(days), f"retention_days is an integer (got {shown(days)})")
    amp.expect(days >= 30, f"retention_days is at least 30 (got {days})", expected=">= 30")


def _manual_run_path(amp: Amp01Context) -> str:
    scheduler = amp.spec.get("lifecycle_scheduler")
    if not isinstance(scheduler, dict) or not isinstance(scheduler.get("manual_run_endpoint"), str):
        amp.skip("/spec names no lifecycle_scheduler.manual_run_endpoint")
    path: str = scheduler["manual_run_endpoint"]
    if not path.startswith(("/", "http://", "https://")):
        amp.fail(f"manual_run_endpoint {shown(path)} is neither an absolute path nor a URL")
    return path


@pytest.mark.smoke
@check("AMP-CAP-10", "AMP-ADMIN-01", global_effects=True)
def test_manual_run_endpoint_exists_and_is_gated(amp: Amp01Context) -> None:
    """The advertised manual_run_endpoint exists (never 404) and refuses callers without the token."""
    path = _manual_run_path(amp)
    options = amp.session.options
    if not (options.admin_token and options.allow_global_effects):
        # Without leave to run a pass, probe with a method that cannot start one.
        reply = amp.anonymous().get(path, root=True)
        amp.expect(
            reply.status != 404,
            f"GET {path} answers 404: the advertised route is absent",
            reply,
            requirement="AMP-CAP-10",
        )
        if reply.status != 405:
            amp.skip(
                f"GET {path} answered {reply.status}, which does not show the route exists; "
                "give --admin-token and --allow-global-effects to probe it with POST"
            )
        return
    admin = amp.admin()
    # the same three requests test_admin sends (its refused POSTs and its pass with the token alone),
    # judged here when they were sent already (that serial group runs them first)
    made = admin_probes_made(amp)
    if made is not None:
        anonymous, wrong, allowed = made
    else:
        wrong_token = amp.with_headers({"X-AMP-Admin-Token": options.admin_token + "-wrong"})
        # independent requests, sent at once (each judged below as if sent alone)
        anonymous, wrong, allowed = together(
            amp,
            [partial(client.post, path, root=True) for client in (amp.anonymous(), wrong_token, admin)],
        )
    amp.expect(
        anonymous.status != 404,
        f"POST {path} answers 404: the advertised route is absent",
        anonymous,
        requirement="AMP-CAP-10",
    )
    # the route exists; refusing callers without the right token is the admin gate's rule
    with about("AMP-ADMIN-03"):
        expect_error(amp, anonymous, 403, ("ACCESS_DENIED", "ADMIN_DISABLED"))
        expect_error(amp, wrong, 403, ("ACCESS_DENIED", "ADMIN_DISABLED"))
    skip_if_admin_token_refused(amp, allowed)  # the user's token refused: a setup problem, not CAP-10's
    amp.expect_status(allowed, 200, what=f"POST {path} with the admin token", requirement="AMP-CAP-10")
    transitions = allowed.json_object().get("transitions")
    amp.expect(
        isinstance(transitions, dict),
        f"the manual run answers without a transitions object (it has {shown(transitions)})",
        allowed,
        requirement="AMP-ADMIN-04",
    )


@check("AMP-CAP-11")
def test_deployment_facts_are_well_formed(amp: Amp01Context) -> None:
    """mcp_compatible, storage_backends and embedding are well-formed (HTTP cannot confirm them)."""
    caps = amp.spec
    facts = {name: caps.get(name, "absent") for name in ("mcp_compatible", "storage_backends", "embedding")}
    amp.note("deployment facts: " + ", ".join(f"{k}={shown(v)}" for k, v in facts.items()))
    embedding = caps.get("embedding")
    if isinstance(embedding, dict):
        provider = embedding.get("provider")
        amp.expect(
            isinstance(provider, str) and provider.strip() != "",
            f"embedding.provider names a provider (got {shown(provider)})",
        )
        dimensions = embedding.get("dimensions")
        amp.expect(
            dimensions is None or (_is_int(dimensions) and dimensions > 0),
            f"embedding.dimensions is null or a positive integer (got {shown(dimensions)})",
        )
    else:
        amp.expect(embedding is None, f"embedding is an object or null (got {shown(embedding)})")
    backends = caps.get("storage_backends")
    amp.expect(
        isinstance(backends, list) and all(isinstance(b, str) and b.strip() for b in backends),
        f"storage_backends names its backends (got {shown(backends)})",
    )
    amp.expect(
        isinstance(caps.get("mcp_compatible"), bool),
        f"mcp_compatible is a boolean (got {shown(caps.get('mcp_compatible'))})",
    )


@check("AMP-CAP-12")
def test_capabilities_stay_the_same_during_the_run(amp: Amp01Context) -> None:
    """Capability values do not change between calls during one server run."""
    first = amp.spec
    for fresh in (False, True):  # the run's shared GET /spec, then one sent now
        reply = _spec_reply(amp, fresh=fresh)
        now = reply.json_object().get("capabilities")
        changed = sorted(
            name
            for name in set(first) | set(now if isinstance(now, dict) else {})
            if not isinstance(now, dict) or first.get(name) != now.get(name)
        )
        amp.expect(not changed, f"capabilities changed since the start of the run: {changed}", reply)
