"""The access-matrix vectors (fixtures/access/matrix.json) and the local model the matrix check uses.

No server here: these tests keep the fixture well-formed, faithful to requirements.md's stances, and
expressible with the agent ids the suite will really have (keyless run ids and keyed agents).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest

from amp_conformance.amp01.requirements import catalogue
from amp_conformance.cli import list_checks
from amp_conformance.engine.resources import load_fixture

with warnings.catch_warnings():
    # The check module marks its tests with @check at import; outside a suite run the plugin has not
    # registered the "amp" marker, which pytest would otherwise warn about.
    warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
    from amp_conformance.amp01.checks.access.vectors import (
        BY_NAME,
        DECOYS,
        HOMES,
        RIDERS,
        SURFACE_IDS,
        VECTORS,
        WRITE_IDS,
        WRITE_SURFACES,
        Unexpressible,
        expressible,
        pattern_matches,
        render,
        render_vector,
        template_roles,
        write_surfaces,
    )

KEYLESS_PREFIX = "amp-ct-01m8paxfy4yyghmz7wns9ykea7"
#: Keyed agent sets the suite may be given (the project's own and a mixed-case, short one).
KEYED_SETS = [
    ["amp-keyed-agent-1", "amp-keyed-agent-2", "amp-keyed-agent-3"],
    ["agent-alpha", "agent-beta", "Agent-Gamma.ops"],
]
ROLES_IN_KEYS_MODE = {"a", "b", "c"}


def ids_for(vector: dict[str, Any], *, keyed: list[str] | None) -> tuple[dict[str, str], str]:
    """(template ids, creator id) as the matrix check builds them."""
    roles = dict(zip(("a", "b", "c"), keyed, strict=True)) if keyed else {}

    def agent(role: str) -> str:
        return roles[role] if keyed else f"{KEYLESS_PREFIX}-{role}"

    caller = vector["caller"] if keyed else vector.get("keyless_caller", vector["caller"])
    ids = {"caller": agent(caller), "owner": f"{KEYLESS_PREFIX}-o1"}
    for name in template_roles({"policy": vector.get("policy", {}), "owner": vector.get("owner", {})}):
        ids[name] = agent(name)
    return ids, agent("a")


def test_the_fixture_loads_through_the_resource_helper() -> None:
    document = load_fixture("access", "matrix.json")
    assert document["format"] == "amp-conformance/access-matrix/1"
    assert document["vectors"] == VECTORS
    assert len(VECTORS) >= 25


def test_vector_names_are_unique_kebab_case() -> None:
    names = [v["name"] for v in VECTORS]
    assert len(names) == len(set(names))
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) for name in names)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_vector_shape_and_citations(vector: dict[str, Any]) -> None:
    known = catalogue().requirements
    allowed_keys = {
        "name",
        "description",
        "requirements",
        "caller",
        "keyless_caller",
        "owner",
        "policy",
        "home",
        "rides_on",
    }
    assert set(vector) - {"expect", "decoy"} <= allowed_keys
    assert vector["description"] and vector["requirements"]
    assert all(rid in known for rid in vector["requirements"]), vector["requirements"]
    assert vector["requirements"][0].startswith("AMP-ACL-"), "the matrix checks belong to the acl area"
    assert vector["caller"] in ROLES_IN_KEYS_MODE, "with keys a run should need at most agents a, b and c"
    assert (
        template_roles(vector.get("policy", {})) | template_roles(vector.get("owner", {}))
        <= ROLES_IN_KEYS_MODE
    )
    assert set(vector.get("policy", {})) <= {"public", "readable_by", "writable_by"}
    assert vector.get("decoy") in (None, *DECOYS)
    assert set(vector["expect"]) == {"read", "write"}
    for decision in vector["expect"].values():
        assert set(decision) == {"allowed", "requirement", "stance"}
        assert isinstance(decision["allowed"], bool)
        assert decision["requirement"] in known
        assert decision["stance"] in ("fail", "warn")
    owner = vector.get("owner", {})
    assert owner.get("type", "user") in ("user", "agent", "organization")


def test_vectors_made_in_another_vectors_group_name_it_in_the_fixture() -> None:
    """``home`` and ``rides_on`` (the loader's HOMES and RIDERS) name an earlier vector made in its own
    group; a rider's host has the same owner type and policy, its caller allowed everything
    where the rider's is refused everything."""
    assert RIDERS == {v["name"]: v["rides_on"] for v in VECTORS if "rides_on" in v} != {}
    assert RIDERS | {v["name"]: v["home"] for v in VECTORS if "home" in v} == HOMES
    assert not any("home" in v and "rides_on" in v for v in VECTORS)
    order = [v["name"] for v in VECTORS]
    for guest, home in HOMES.items():
        assert home in BY_NAME and home not in HOMES, (guest, home)
    for rider, host in RIDERS.items():
        assert order.index(host) < order.index(rider), (rider, host)
        # the same policy and owner type (the owner templates render alike: the groups check that)
        assert BY_NAME[rider].get("policy") == BY_NAME[host].get("policy"), (rider, host)
        assert (BY_NAME[rider].get("owner") or {}).get("type") == (BY_NAME[host].get("owner") or {}).get(
            "type"
        )
        assert not any(BY_NAME[rider]["expect"][a]["allowed"] for a in ("read", "write")), rider
        assert all(BY_NAME[host]["expect"][a]["allowed"] for a in ("read", "write")), host


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_stances_follow_requirements_md(vector: dict[str, Any]) -> None:
    """C-16 (non-agent owners), C-17 (writer reads), C-18 (case), AMP-ACL-05 (SHOULD) are warnings."""
    expect = vector["expect"]
    owner = vector.get("owner", {})
    caller_is_owner = owner.get("id") == "{caller}"
    if caller_is_owner and owner.get("type") in ("user", "organization"):
        assert expect["read"]["stance"] == expect["write"]["stance"] == "warn", "C-16"
    if caller_is_owner and owner.get("type") == "agent":
        assert expect["read"]["stance"] == expect["write"]["stance"] == "fail", (
            "C-16 requires the agent owner"
        )
    policy = vector.get("policy", {})
    if policy.get("writable_by") and not expect["read"]["allowed"] and not policy.get("readable_by"):
        assert expect["read"]["stance"] == "warn", "C-17: a writer reading is a warning"
    if vector.get("decoy") == "case-insensitive":
        assert {d["stance"] for d in expect.values()} == {"warn"}, "C-18: case sensitivity is a warning"
    for action, decision in expect.items():
        if decision["requirement"] in ("AMP-ACL-03", "AMP-ACL-05"):
            assert decision["stance"] == "warn", f"{action}: {decision['requirement']} is a SHOULD"
        if decision["stance"] == "fail":
            assert catalogue().requirements[decision["requirement"]].level == "MUST"


@pytest.mark.parametrize("keyed", [None, *KEYED_SETS], ids=["keyless", "keyed-amp", "keyed-mixed-case"])
def test_every_vector_is_expressible_with_real_agent_ids(keyed: list[str] | None) -> None:
    """With the suite's keyless ids and with ordinary keyed agents no vector has to skip."""
    problems = []
    for vector in VECTORS:
        ids, creator = ids_for(vector, keyed=keyed)
        try:
            policy, owner_id, _ = render_vector(vector, ids)
        except Unexpressible as exc:
            problems.append(f"{vector['name']}: {exc}")
            continue
        reason = expressible(vector, policy, owner_id, creator, ids["caller"])
        if reason:
            problems.append(f"{vector['name']}: {reason}")
        patterns = policy["readable_by"] + policy["writable_by"]
        assert not any(set(p) & set("?[]") for p in patterns), "C-18: test only '*'"
        if keyed is None:
            assert all(p == "*" or KEYLESS_PREFIX[7:] in p for p in patterns), (
                f"{vector['name']}: keyless patterns carry the run id: they never match another run's agents"
            )
    assert not problems, problems


def test_keyless_vectors_read_like_the_spec_examples() -> None:
    """'agent-team-*' admits agent-team-1, -dev and the empty run; not agent-teams or x-agent-team-1."""
    by_name = {v["name"]: v for v in VECTORS}
    rendered = {}
    for name in (
        "star-matches-one-character",
        "star-matches-several-characters",
        "star-matches-the-empty-run",
        "star-pattern-refuses-a-longer-literal",
    ):
        ids, _ = ids_for(by_name[name], keyed=None)
        rendered[name] = (render_vector(by_name[name], ids)[0]["readable_by"][0], ids["caller"])
    team = f"{KEYLESS_PREFIX}-agent-team-*"
    assert {pattern for pattern, _ in rendered.values()} == {team}
    assert [caller.removeprefix(KEYLESS_PREFIX + "-") for _, caller in rendered.values()] == [
        "agent-team-1",
        "agent-team-dev",
        "agent-team-",
        "agent-teams",
    ]


def test_the_local_matcher_follows_acl_04_and_acl_06() -> None:
    for agent in ("agent-team-1", "agent-team-dev", "agent-team-"):
        assert pattern_matches("agent-team-*", agent)
    for agent in ("agent-teams", "x-agent-team-1", "agent-tea"):
        assert not pattern_matches("agent-team-*", agent)
    assert pattern_matches("*", "anything at all")
    assert pattern_matches("a*c*e", "abcde") and not pattern_matches("a*c*e", "abcdf")
    assert pattern_matches("agent-456", "agent-456")
    assert not pattern_matches("agent-456", "agent-4567")
    assert not pattern_matches("Agent-456", "agent-456")
    assert pattern_matches("agent-team-*", "x-agent-team-1", "substring")
    assert pattern_matches("agent-456", "agent-4567", "prefix")
    assert pattern_matches("Agent-456", "agent-456", "case-insensitive")
    assert not pattern_matches("a.c", "abc"), "only '*' is special"


def test_templates_render() -> None:
    ids = {"caller": "agent-beta", "c": "Agent-Gamma.ops"}
    assert render("{caller}", ids) == "agent-beta"
    assert render("{caller[:-1]}*", ids) == "agent-bet*"
    assert render("{caller[4:-1]}*", ids) == "t-bet*"
    assert render("{caller[:-1]}{caller[-1]|other}*", ids) == "agent-bet-*"
    assert render("{caller|flipcase}", ids) == "Agent-beta"
    assert render("{c|flipcase}-x", ids) == "agent-Gamma.ops-x"
    with pytest.raises(Unexpressible):
        render("{caller|flipcase}", {"caller": "1234-5678"})
    with pytest.raises(Unexpressible):
        render("{caller[40]}", ids)


def test_the_matrix_checks_cover_every_acl_requirement() -> None:
    access = [c for c in list_checks() if c["id"].startswith("test_access.py::")]
    matrix = [c for c in access if "test_access_matrix[" in c["id"]]
    assert len(matrix) == len(VECTORS), "one check per vector"
    assert all(set(SURFACE_IDS) <= set(c["requirements"]) for c in matrix)
    assert all(c["area"] == "acl" and c["level"] == "MUST" for c in matrix)
    acl_ids = {rid for rid in catalogue().requirements if rid.startswith("AMP-ACL-")}
    cited = {rid for c in access for rid in c["requirements"]}
    assert acl_ids <= cited, sorted(acl_ids - cited)


def test_the_matrix_holds_the_vectors_the_issue_asks_for() -> None:
    """public; readable_by exact and with '*'; '*' alone; empty run; non-matches; writable_by only;
    default policy; owners of type agent, user, organization; creator bypass."""
    names = " ".join(v["name"] for v in VECTORS)
    for needed in (
        "public-",
        "readable-by-exact",
        "star-matches-one-character",
        "star-matches-the-empty-run",
        "star-alone-admits-every-agent-to-read",
        "star-pattern-refuses-a-longer-literal",
        "star-pattern-is-anchored-at-the-start",
        "writable-by-exact-grants-write-not-read",
        "default-policy",
        "owner-of-type-agent",
        "owner-of-type-user",
        "owner-of-type-organization",
        "creator-bypasses",
    ):
        assert needed in names, needed


def test_every_write_question_is_asked_on_both_surfaces() -> None:
    """A vector about the write decision (a write requirement cited, or the write allowed) asks PATCH
    and DELETE; the default refusal of a stranger is asked on both by its own vector."""
    by_name = {vector["name"]: vector for vector in VECTORS}
    assert write_surfaces(by_name["default-policy-refuses-a-stranger"]) == WRITE_SURFACES
    for vector in VECTORS:
        about_write = vector["expect"]["write"]["allowed"] or WRITE_IDS & set(vector["requirements"])
        if about_write:
            assert write_surfaces(vector) == WRITE_SURFACES, vector["name"]
        if (vector.get("policy") or {}).get("writable_by"):
            assert "PATCH" in write_surfaces(vector), vector["name"]


def test_every_vector_citing_the_refusal_shape_sees_a_refusal() -> None:
    """AMP-ACL-10 (a refusal is 403 with a documented code) is judged on every refused surface: each
    vector citing it asks at least one surface its expected decision refuses."""
    for vector in VECTORS:
        if "AMP-ACL-10" not in vector["requirements"]:
            continue
        read_refused = not vector["expect"]["read"]["allowed"]
        write_refused = not vector["expect"]["write"]["allowed"] and bool(write_surfaces(vector))
        assert read_refused or write_refused, vector["name"]
