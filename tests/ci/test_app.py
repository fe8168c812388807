"""``--app module:attribute``: a Python ASGI app checked in-process, same checks, same reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_conformance.cli import main
from amp_conformance.engine.app_target import AppLoadError, app_client, is_asgi_app, load_app
from tests.ci import apps
from tests.ci.helpers import read_json, run_command, validate

REFERENCE_APP = "reference_server.amp01.app:default_app"


@pytest.mark.slow
def test_the_reference_app_passes_in_process(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = run_command(
        [
            "--app",
            REFERENCE_APP,
            "--no-fuzz",
            "--server-env",
            "AMP_ADMIN_TOKEN=T",
            "--admin-token",
            "T",
            "--allow-global-effects",
            "--json",
            str(report),
        ]
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    document = read_json(report)
    validate(document, "report.schema.json")
    assert document["summary"]["verdict"] == "pass"
    assert document["summary"]["outcomes"]["pass"] > 150
    assert document["server"]["base_url"] == "http://testserver/amp/v1"


@pytest.mark.parametrize("spec", ["reference_server:create_app", "reference_server:default_app"])
def test_the_package_factories_need_no_arguments(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--app", spec, "--only", "health,cap,read"]) == 0
    assert "verdict: PASS" in capsys.readouterr().out


def test_a_fault_is_caught_in_process_and_server_env_reaches_the_app(tmp_path: Path) -> None:
    report, summary = tmp_path / "r.json", tmp_path / "s.md"
    result = run_command(
        [
            *("--app", REFERENCE_APP, "--server-env", "AMP_REFERENCE_FAULTS=limit-clamped", "--only", "list"),
            *("--json", str(report), "--markdown", str(summary)),
        ]
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    assert "AMP-LIST-05" in result.stdout
    # the curl lines name the in-process origin: the report says how to replay them (issue 23 §3)
    document = read_json(report)
    validate(document, "report.schema.json")
    failing = next(c for c in document["checks"] if c["outcome"] == "fail")
    assert failing["curl"] and "http://testserver/" in failing["curl"]
    note = document["server"]["replay_note"]
    assert REFERENCE_APP in note and "http://127.0.0.1:8080 in place of http://testserver" in note
    assert f"curl lines: {note}" in result.stdout
    assert "Curl lines:" in summary.read_text()


def test_wall_clock_waits_still_work_in_process(tmp_path: Path) -> None:
    """The rate-limit window check sleeps for the window to pass: with a 3 s window it runs and passes."""
    report = tmp_path / "report.json"
    result = run_command(
        [
            "--app",
            REFERENCE_APP,
            "--server-env",
            "AMP_SCORING_PATCH_WINDOW_SECONDS=3",
            "--only",
            "rate",
            "--json",
            str(report),
        ]
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    checks = {c["name"]: c for c in read_json(report)["checks"]}
    waited = checks["test_scoring_patches_are_accepted_again_after_the_window"]
    assert waited["outcome"] == "pass", waited["message"]
    assert waited["duration_seconds"] >= 2.5


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nosuchmodule_xyz:app", "no module named 'nosuchmodule_xyz'"),
        ("reference_server:nothing_here", "has no attribute 'nothing_here'"),
        ("json:dumps", "not an ASGI app"),
        ("reference_server.amp01.app", "takes module:attribute"),
        ("tests.ci.apps:factory_that_raises", "factory_that_raises() failed: RuntimeError: missing setting"),
        ("tests.ci.apps:factory_of_nothing", "returned a int, not an ASGI app"),
        ("tests.ci.apps:needs_arguments", "not an ASGI app"),
        ("tests.ci.apps:failing_startup", "start-up failed (database unreachable)"),
        ("tests.ci.lazyapp:app", "reading app failed: SyntaxError"),
    ],
)
def test_bad_apps_are_one_line_and_exit_2(
    spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--app", spec, "--only", "health"]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_an_import_error_inside_the_module_is_reported_as_such(tmp_path: Path) -> None:
    (tmp_path / "brokenapp.py").write_text("import not_installed_dependency_xyz\napp = None\n")
    result = run_command(["--app", "brokenapp:app"], cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    assert "importing brokenapp failed" in result.stderr and "not_installed_dependency_xyz" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_lifespan_runs_around_the_run() -> None:
    apps.EVENTS.clear()
    with app_client(load_app("tests.ci.apps:lifespan_app")) as http:
        assert http.get("/").text == "lifespan.startup"
    assert apps.EVENTS == ["lifespan.startup", "lifespan.shutdown"]


def test_an_app_without_lifespan_support_is_used_without_it() -> None:
    with app_client(apps.no_lifespan) as http:
        assert http.get("/anything").status_code == 204


def test_a_failed_startup_is_an_app_load_error() -> None:
    with pytest.raises(AppLoadError, match="database unreachable"):
        app_client(apps.failing_startup)


def test_what_counts_as_an_app() -> None:
    assert is_asgi_app(apps.lifespan_app)
    assert not is_asgi_app(apps.factory_of_nothing)
    assert not is_asgi_app(apps.needs_arguments)
    assert not is_asgi_app(dict)
