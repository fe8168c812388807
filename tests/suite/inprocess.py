"""Run the suite in-process against the reference server (no sockets): the project tests' workhorse."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amp_conformance.cli import SuiteOutcome, list_checks, run_suite
from amp_conformance.engine.inprocess import asgi_client
from reference_server import Settings, create_app

ADMIN_TOKEN = "self-test-admin-token"
BASE_URL = "http://testserver"
KEYED_AGENTS = {f"amp-keyed-agent-{n}": f"key-{n}-{'x' * 8}" for n in range(1, 6)}


def write_keys_file(directory: Path) -> Path:
    """A server keys file (digests) for :data:`KEYED_AGENTS`."""
    digests = {
        agent: "sha256:" + hashlib.sha256(key.encode()).hexdigest() for agent, key in KEYED_AGENTS.items()
    }
    path = directory / "api-keys.json"
    path.write_text(json.dumps(digests))
    return path


def run_against_reference(
    env: Mapping[str, str] | None = None,
    *,
    areas: str | None = None,
    admin: bool = True,
    keys: bool = False,
    fuzz: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> SuiteOutcome:
    """Start the reference server in-process with ``env`` and run the suite against it."""
    server_env = {"AMP_LIFECYCLE_ENABLED": "false", **(env or {})}
    if admin:
        server_env["AMP_ADMIN_TOKEN"] = ADMIN_TOKEN
    app = create_app(Settings.from_env(server_env))
    values: dict[str, Any] = {
        "amp_base_url": BASE_URL,
        "amp_only": areas,
        "amp_no_fuzz": not fuzz,
        "amp_timeout": 10.0,
        "amp_deadline": 60.0,
    }
    if admin:
        values.update(amp_admin_token=ADMIN_TOKEN, amp_allow_global_effects=True)
    if keys:
        values["amp_api_key"] = [f"{agent}={key}" for agent, key in KEYED_AGENTS.items()]
    values.update(extra or {})
    with asgi_client(app, BASE_URL) as http:
        return run_suite(values, http=http, quiet=True)


def areas_citing(requirement: str) -> str:
    """Comma-separated areas of every check that cites ``requirement``."""
    areas = sorted({c["area"] for c in list_checks() if requirement in c["requirements"]})
    return ",".join(areas)
