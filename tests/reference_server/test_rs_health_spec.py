"""GET /health, GET /spec and /openapi.json (AMP-HEALTH-*, AMP-CAP-*, AMP-OAS-01/02)."""

from __future__ import annotations

from importlib import resources

import pytest

from reference_server.amp01.embedding import DIMENSIONS, PROVIDER


def test_health_is_open_and_reports_version(amp):
    response = amp.request("GET", "/health")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"status": "ok", "amp_version": "0.1.0"}


def test_spec_reports_the_enforced_values(amp):
    response = amp.request("GET", "/spec")
    assert response.status_code == 200
    body = response.json()
    assert body["amp_version"] == "0.1.0"
    assert body["capabilities"] == {
        "mcp_compatible": False,
        "storage_backends": ["memory"],
        "api_keys_required": False,
        "scoring_patch_limit": {"max_patches": 5, "window_seconds": 3600},
        "embedding": {"provider": PROVIDER, "dimensions": DIMENSIONS},
        "max_cell_size_bytes": 65536,
        "max_page_size": 100,
        "retention_days": 30,
        "lifecycle_scheduler": {
            "enabled": False,
            "interval_seconds": 3600,
            "manual_run_endpoint": "/amp/v1/lifecycle/run",
        },
    }


def test_spec_follows_settings(make_amp):
    amp = make_amp(
        scoring_patch_limit=0,
        max_cell_size_bytes=4096,
        lifecycle_enabled=True,
        lifecycle_interval_seconds=10,
    )
    caps = amp.request("GET", "/spec").json()["capabilities"]
    assert caps["scoring_patch_limit"] is None
    assert caps["max_cell_size_bytes"] == 4096
    assert caps["lifecycle_scheduler"]["enabled"] is True
    assert caps["lifecycle_scheduler"]["interval_seconds"] == 10
    custom = make_amp(scoring_patch_limit=2, scoring_patch_window_seconds=7)
    caps = custom.request("GET", "/spec").json()["capabilities"]
    assert caps["scoring_patch_limit"] == {"max_patches": 2, "window_seconds": 7}


def test_spec_is_stable_across_calls(amp):
    assert amp.request("GET", "/spec").json() == amp.request("GET", "/spec").json()


def test_manual_run_endpoint_exists(amp):
    path = amp.request("GET", "/spec").json()["capabilities"]["lifecycle_scheduler"]["manual_run_endpoint"]
    response = amp.client.post(path)
    assert response.status_code == 403  # never 404, even without a token


def test_openapi_served_byte_for_byte(amp):
    document = resources.files("amp_conformance").joinpath("amp01", "contract", "openapi.json")
    if not document.is_file():
        pytest.skip("the contract file is not written yet")
    response = amp.client.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.content == document.read_bytes()


def test_openapi_missing_is_an_enveloped_404(amp, monkeypatch):
    import reference_server.amp01.app as app_module

    class _Missing:
        @staticmethod
        def files(_package: str):
            raise ModuleNotFoundError("amp_conformance")

    monkeypatch.setattr(app_module, "resources", _Missing)
    amp.error(amp.client.get("/openapi.json"), 404, "NOT_FOUND")


def test_head_on_health(amp):
    assert amp.client.head("/amp/v1/health").status_code == 200
