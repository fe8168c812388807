"""Identity and optional API keys (AMP-AUTH-*)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reference_server import ConfigError, Settings
from reference_server.amp01.auth import KeyRing, hash_key, load_keys_file, main

KEYS = {"agent-one": "key-one-secret", "agent-two": "key-two-secret"}


@pytest.fixture
def keys_file(tmp_path):
    path = tmp_path / "api-keys.json"
    path.write_text(json.dumps({agent: hash_key(key) for agent, key in KEYS.items()}))
    return path


@pytest.fixture
def keyed(make_amp, keys_file):
    return make_amp(api_keys_file=str(keys_file))


def creds(agent, key=None):
    headers = {"X-AMP-Agent-ID": agent}
    if key is not None:
        headers["X-AMP-API-Key"] = key
    return headers


def test_hash_matches_the_documented_digest():
    assert hash_key("foo") == "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"


def test_hash_cli(capsys):
    assert main(["hash", "foo"]) == 0
    assert capsys.readouterr().out.strip() == hash_key("foo")
    assert main(["nope"]) == 2


def test_hash_cli_as_module():
    result = subprocess.run(
        [sys.executable, "-m", "reference_server.amp01.auth", "hash", "the-agent-key"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == hash_key("the-agent-key")
    assert result.stderr == ""  # no "found in sys.modules" RuntimeWarning


def test_keyring_verify():
    ring = KeyRing({"a": hash_key("k")})
    assert ring.verify("a", "k")
    assert not ring.verify("a", "K")
    assert not ring.verify("b", "k")
    assert not ring.verify(None, "k")
    assert not ring.verify("a", None)


def test_correct_pair_works_everywhere(keyed):
    one = creds("agent-one", KEYS["agent-one"])
    owner = keyed.owner()
    response = keyed.request("POST", "/memories", json=keyed.body(owner), headers=one)
    assert response.status_code == 201
    cell = response.json()
    assert cell["identity"]["created_by"] == "agent-one"
    assert keyed.request("GET", f"/memories/{cell['id']}", headers=one).status_code == 200
    assert keyed.request("GET", "/memories", headers=one, params={"owner_id": owner}).status_code == 200
    search = {"query": "x", "owner_id": owner}
    assert keyed.request("POST", "/memories/search", headers=one, json=search).status_code == 200
    assert keyed.request("PATCH", f"/memories/{cell['id']}", headers=one, json={}).status_code == 200


def test_every_failure_is_the_same_401(keyed):
    cell_body = keyed.body(keyed.owner())
    attempts = [
        creds("agent-one"),  # missing key
        creds("agent-one", "wrong"),  # wrong key
        creds("agent-one", KEYS["agent-two"]),  # another agent's key
        creds("nobody", KEYS["agent-one"]),  # unregistered agent
        {"X-AMP-API-Key": KEYS["agent-one"]},  # missing agent id
        {},
    ]
    bodies = set()
    for headers in attempts:
        response = keyed.request("POST", "/memories", json=cell_body, headers=headers)
        keyed.error(response, 401, "UNAUTHENTICATED")
        bodies.add(response.text)
        response = keyed.request("GET", "/memories", headers=headers)
        keyed.error(response, 401, "UNAUTHENTICATED")
        bodies.add(response.text)
    assert len(bodies) == 1
    assert len(keyed.state.store) == 0


def test_no_created_by_fallback_in_keys_mode(keyed):
    body = keyed.body(keyed.owner(), created_by="agent-one")
    keyed.error(keyed.request("POST", "/memories", json=body), 401, "UNAUTHENTICATED")
    assert len(keyed.state.store) == 0


def test_authentication_comes_before_validation(keyed):
    response = keyed.request("POST", "/memories", json={"type": "nope"}, headers=creds("agent-one", "wrong"))
    keyed.error(response, 401, "UNAUTHENTICATED")
    response = keyed.request("PATCH", "/memories/whatever", content=b"not json", headers=creds("agent-one"))
    keyed.error(response, 401, "UNAUTHENTICATED")


def test_health_and_spec_stay_open(keyed):
    assert keyed.request("GET", "/health").status_code == 200
    spec = keyed.request("GET", "/spec")
    assert spec.status_code == 200
    assert spec.json()["capabilities"]["api_keys_required"] is True


def test_public_cell_needs_an_authenticated_agent(keyed):
    one = creds("agent-one", KEYS["agent-one"])
    body = keyed.body(keyed.owner(), access_policy={"public": True})
    cell = keyed.request("POST", "/memories", json=body, headers=one).json()
    two = creds("agent-two", KEYS["agent-two"])
    assert keyed.request("GET", f"/memories/{cell['id']}", headers=two).status_code == 200
    keyed.error(keyed.request("GET", f"/memories/{cell['id']}", headers=creds("agent-two")), 401)


@pytest.mark.parametrize(
    "content",
    [
        None,
        "not json",
        "[]",
        '{"agent": 5}',
        '{"agent": "md5:abc"}',
        '{"agent": "sha256:xyz"}',
        '{"": "sha256:' + "0" * 64 + '"}',
    ],
)
def test_bad_keys_file_stops_start_up(tmp_path, content):
    path = tmp_path / "keys.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError):
        load_keys_file(str(path))
    with pytest.raises(ConfigError):
        Settings.from_env({"AMP_API_KEYS_FILE": str(path)})
    with pytest.raises(ConfigError):
        Settings(api_keys_file=str(path))


def test_keys_file_unreadable_directory(tmp_path):
    with pytest.raises(ConfigError):
        load_keys_file(str(tmp_path))


def test_digests_are_normalised(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"a": hash_key("k").upper().replace("SHA256", "sha256")}))
    assert KeyRing(load_keys_file(str(path))).verify("a", "k")


def test_keyless_mode_trusts_the_header(amp):
    assert amp.request("GET", "/spec").json()["capabilities"]["api_keys_required"] is False
    cell = amp.new_cell(agent="any string at all")
    assert amp.get(cell["id"], "any string at all").status_code == 200


@pytest.mark.parametrize("route", ["get", "patch", "delete", "list", "alias", "search"])
def test_every_agent_route_needs_the_header(amp, route):
    cell = amp.new_cell()
    response = {
        "get": lambda: amp.get(cell["id"], None),
        "patch": lambda: amp.patch(cell["id"], {}, None),
        "delete": lambda: amp.delete(cell["id"], None),
        "list": lambda: amp.list(None),
        "alias": lambda: amp.list(None, path="/memories/query"),
        "search": lambda: amp.search({"query": "q", "owner_id": "o"}, None),
    }[route]()
    amp.error(response, 401, "MISSING_AGENT_ID")
