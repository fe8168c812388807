"""Access control (AMP-ACL-*): one rule on GET, PATCH, DELETE, search and list."""

from __future__ import annotations

import pytest

from reference_server.amp01.access import pattern_matches


@pytest.mark.parametrize(
    ("pattern", "agent", "expected"),
    [
        ("agent-team-*", "agent-team-1", True),
        ("agent-team-*", "agent-team-dev", True),
        ("agent-team-*", "agent-team-", True),
        ("agent-team-*", "agent-teams", False),
        ("agent-team-*", "x-agent-team-1", False),
        ("*", "anyone", True),
        ("*", "", True),
        ("agent-456", "agent-456", True),
        ("agent-456", "agent-4567", False),
        ("agent-456", "Agent-456", False),
        ("*-bot", "helper-bot", True),
        ("*-bot", "helper-bots", False),
        ("a*b*c", "abc", True),
        ("a*b*c", "axxbyyc", True),
        ("a*b*c", "acb", False),
        ("a**c", "ac", True),
        ("ab*ba", "aba", False),
        ("agent-?", "agent-1", False),
        ("agent-?", "agent-?", True),
        ("agent-[12]", "agent-1", False),
        ("agent-[12]", "agent-[12]", True),
    ],
)
def test_pattern_language(pattern, agent, expected):
    assert pattern_matches(pattern, agent) is expected


def _surfaces(amp, cell, owner, agent):
    """(GET status, in search, in list) for ``agent``."""
    got = amp.get(cell["id"], agent).status_code
    searched = cell["id"] in amp.ids(amp.search({"query": cell["content"]["text"], "owner_id": owner}, agent))
    listed = cell["id"] in amp.ids(amp.list(agent, owner_id=owner))
    return got, searched, listed


@pytest.mark.parametrize(
    ("policy", "agent", "readable"),
    [
        ({}, "stranger", False),
        ({"public": True}, "stranger", True),
        ({"readable_by": ["agent-456"]}, "agent-456", True),
        ({"readable_by": ["agent-456"]}, "agent-4567", False),
        ({"readable_by": ["agent-456"]}, "Agent-456", False),
        ({"readable_by": ["agent-team-*"]}, "agent-team-dev", True),
        ({"readable_by": ["agent-team-*"]}, "x-agent-team-1", False),
        ({"readable_by": ["*"]}, "random-agent", True),
        ({"writable_by": ["w-*"], "readable_by": ["r-*"]}, "w-1", False),
        ({"writable_by": ["w-*"], "readable_by": ["r-*"]}, "r-1", True),
    ],
)
def test_read_matrix_is_the_same_on_every_surface(amp, policy, agent, readable):
    owner = amp.owner()
    cell = amp.create(amp.body(owner, "matrix text", access_policy=policy), "creator").json()
    expected = (200 if readable else 403, readable, readable)
    assert _surfaces(amp, cell, owner, agent) == expected


def test_writable_by_grants_write_not_read(amp):
    cell = amp.new_cell(agent="creator", access_policy={"writable_by": ["w-*"], "readable_by": ["r-*"]})
    assert amp.patch(cell["id"], {"content": {"text": "by w"}}, "w-1").status_code == 200
    amp.error(amp.get(cell["id"], "w-1"), 403, "FORBIDDEN")
    amp.error(amp.patch(cell["id"], {"content": {"text": "by r"}}, "r-1"), 403, "FORBIDDEN")


def test_public_never_grants_write(amp):
    cell = amp.new_cell(agent="creator", access_policy={"public": True})
    assert amp.get(cell["id"], "stranger").status_code == 200
    amp.error(amp.patch(cell["id"], {"content": {"text": "x"}}, "stranger"), 403, "FORBIDDEN")
    amp.archive(cell["id"], "creator")
    amp.error(amp.delete(cell["id"], "stranger"), 403, "FORBIDDEN")


@pytest.mark.parametrize("owner_type", ["agent", "user", "organization"])
def test_owner_bypass(amp, owner_type):
    owner = amp.owner("o")
    policy = {"readable_by": ["x"], "writable_by": ["y"]}
    cell = amp.create(amp.body(owner, "owned", owner_type=owner_type, access_policy=policy), "creator").json()
    assert amp.get(cell["id"], owner).status_code == 200
    assert amp.patch(cell["id"], {"content": {"text": "by owner"}}, owner).status_code == 200
    amp.archive(cell["id"], owner)
    assert amp.delete(cell["id"], owner).status_code == 204


def test_creator_bypass(amp):
    policy = {"readable_by": ["x"], "writable_by": ["y"], "public": False}
    cell = amp.new_cell(agent="creator", access_policy=policy)
    assert amp.get(cell["id"], "creator").status_code == 200
    assert amp.patch(cell["id"], {"content": {"text": "mine"}}, "creator").status_code == 200
    amp.archive(cell["id"], "creator")
    assert amp.delete(cell["id"], "creator").status_code == 204


def test_default_policy_is_owner_and_creator_only(amp):
    cell = amp.new_cell(agent="creator")
    amp.error(amp.get(cell["id"], "stranger"), 403, "FORBIDDEN")
    amp.error(amp.patch(cell["id"], {}, "stranger"), 403, "FORBIDDEN")


def test_policy_changes_apply_at_once(amp):
    cell = amp.new_cell(agent="creator")
    amp.error(amp.get(cell["id"], "x"), 403)
    amp.patch(cell["id"], {"access_policy": {"readable_by": ["x"]}}, "creator")
    assert amp.get(cell["id"], "x").status_code == 200
    amp.patch(cell["id"], {"access_policy": {"readable_by": []}}, "creator")
    amp.error(amp.get(cell["id"], "x"), 403)


def test_body_cannot_raise_rights(amp):
    cell = amp.new_cell(agent="creator")
    body = {"identity": {"created_by": "stranger"}, "content": {"text": "hijack"}}
    amp.error(amp.patch(cell["id"], body, "stranger"), 403, "FORBIDDEN")
    ok = amp.patch(cell["id"], body, "creator").json()
    assert ok["identity"]["created_by"] == "creator"
