"""Health and the protocol version the server reports (AMP-HEALTH, AMP-CAP-01..03).

The checks judge one anonymous GET of ``/health`` and one of ``/spec``, sent once per run."""

from __future__ import annotations

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._support import open_route_reply, shown


@pytest.mark.smoke
@check("AMP-HEALTH-01")
def test_health_reports_ok_and_the_protocol_version(amp: Amp01Context) -> None:
    """GET /health answers 200 {"status": "ok", "amp_version": "0.1.0"}."""
    reply = open_route_reply(amp, "/health")
    amp.expect_status(reply, 200)
    body = reply.json_object()
    amp.expect(body.get("status") == "ok", f"status is 'ok' (got {shown(body.get('status'))})", reply)
    amp.expect(
        body.get("amp_version") == "0.1.0",
        f"amp_version is '0.1.0' (got {shown(body.get('amp_version'))})",
        reply,
    )


@pytest.mark.smoke
@check("AMP-HEALTH-02", "AMP-AUTH-07")
def test_health_needs_no_identity_and_answers_json(amp: Amp01Context) -> None:
    """GET /health needs neither agent id nor key, and answers JSON."""
    reply = open_route_reply(amp, "/health")
    amp.expect_status(reply, 200)
    content_type = reply.headers.get("content-type", "")
    amp.expect(
        content_type.startswith("application/json"),
        f"Content-Type is application/json (got {shown(content_type)})",
        reply,
    )
    reply.json_object()


@pytest.mark.smoke
@check("AMP-CAP-01")
def test_spec_reports_version_and_capabilities(amp: Amp01Context) -> None:
    """GET /spec answers 200 with amp_version "0.1.0" and a capabilities object, without identity."""
    reply = open_route_reply(amp, "/spec")
    amp.expect_status(reply, 200)
    body = reply.json_object()
    amp.expect(
        body.get("amp_version") == "0.1.0",
        f"amp_version is '0.1.0' (got {shown(body.get('amp_version'))})",
        reply,
    )
    amp.expect(isinstance(body.get("capabilities"), dict), "capabilities is an object", reply)


@pytest.mark.smoke
@check("AMP-CAP-03")
def test_spec_and_health_agree_on_the_version(amp: Amp01Context) -> None:
    """/spec and /health report the same amp_version."""
    health = open_route_reply(amp, "/health")
    spec = open_route_reply(amp, "/spec")
    amp.expect_status(health, 200)
    amp.expect_status(spec, 200)
    versions = (health.json_object().get("amp_version"), spec.json_object().get("amp_version"))
    amp.expect(
        versions[0] == versions[1],
        f"/health says {shown(versions[0])} and /spec says {shown(versions[1])}",
        health,
        expected="the same amp_version at both",
    )
