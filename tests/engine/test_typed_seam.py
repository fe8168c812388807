"""Issue 35: the protocol seam is typed, so ``mypy --strict`` (the project's configuration) rejects a
protocol whose session, context or options disagree with what it declares, and accepts a correct one.

Both are type-checked in one mypy run (one process, the project's cache): the wrong one must give
exactly the errors named below, the right one none.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import httpx
import pytest

from amp_conformance.engine.context import CheckContext
from amp_conformance.engine.options import OptionSpec, OptionValues
from amp_conformance.engine.protocol import Protocol, ProtocolSession
from amp_conformance.engine.run import Run
from amp_conformance.engine.spec import CheckSpec

REPO = Path(__file__).resolve().parents[2]

COMMON = """
from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import httpx

from amp_conformance.engine.context import CheckContext
from amp_conformance.engine.options import OptionValues
from amp_conformance.engine.protocol import Protocol, ProtocolSession
from amp_conformance.engine.run import Run
from amp_conformance.engine.spec import CheckSpec


class KvSession(ProtocolSession):
    def __init__(self, run: Run) -> None:
        self.run = run

    @property
    def target_label(self) -> str:
        return "kv"


class KvContext(CheckContext[KvSession]):
    def prefix(self) -> str:
        return self.session.run.prefix  # the run is typed: a Run, not Any
"""

WRONG = """
class WrongProtocol(Protocol[None, KvSession, KvContext]):
    name: ClassVar[str] = "wrong"

    def parse_options(self, values: OptionValues) -> None:
        return None

    def open_session(  # LINE:open_session
        self, run: int, *, http: httpx.Client | None, plugins: Sequence[object] = ()
    ) -> str:
        return "a session"

    def context(self, session: int, spec: CheckSpec) -> str:  # LINE:context
        return "a context"


class NotASession(Protocol[None, int, KvContext]):  # LINE:type-argument
    pass


def options_of(protocol: WrongProtocol, run: Run) -> str:
    return protocol.own_options(run.options)  # LINE:own_options
"""

RIGHT = """
class KvOptions:
    keep: bool = False


class KvProtocol(Protocol[KvOptions, KvSession, KvContext]):
    name: ClassVar[str] = "kv"

    def parse_options(self, values: OptionValues) -> KvOptions:
        options = KvOptions()
        options.keep = values.flag("keep")
        return options

    def open_session(
        self, run: Run, *, http: httpx.Client | None, plugins: Sequence[object] = ()
    ) -> KvSession:
        return KvSession(run)

    def context(self, session: KvSession, spec: CheckSpec) -> KvContext:
        return KvContext(session.run, spec, session)


def keep_of(protocol: KvProtocol, run: Run) -> bool:
    return protocol.own_options(run.options).keep
"""


def _lines(source: str) -> dict[str, int]:
    """``# LINE:name`` markers -> their line numbers."""
    found: dict[str, int] = {}
    for number, line in enumerate(source.splitlines(), start=1):
        match = re.search(r"# LINE:(\S+)", line)
        if match:
            found[match.group(1)] = number
    return found


def test_mypy_rejects_a_wrong_protocol_and_accepts_a_right_one(tmp_path: Path) -> None:
    wrong = textwrap.dedent(COMMON) + textwrap.dedent(WRONG)
    right = textwrap.dedent(COMMON) + textwrap.dedent(RIGHT)
    (tmp_path / "wrong_protocol.py").write_text(wrong, encoding="utf-8")
    (tmp_path / "right_protocol.py").write_text(right, encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--no-error-summary",
            "--show-error-codes",
            str(tmp_path / "wrong_protocol.py"),
            str(tmp_path / "right_protocol.py"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "right_protocol.py" not in output, output
    errors = [line for line in output.splitlines() if ": error: " in line]
    lines = _lines(wrong)

    def found(marker: str, *words: str, span: int = 0) -> bool:
        """An error at the marked line (or up to ``span`` lines below it) saying all of ``words``."""
        at = range(lines[marker], lines[marker] + span + 1)
        return any(int(e.split(":")[1]) in at and all(w in e for w in words) for e in errors)

    # open_session: its run is not a Run, its session not the declared KvSession
    assert found("open_session", 'Argument 1 of "open_session"', '"Run"', "[override]", span=1), output
    assert found("open_session", 'Return type "str" of "open_session"', '"KvSession"', span=1), output
    # context: a session of another type, a context that is no KvContext
    assert found("context", 'Argument 1 of "context"', '"KvSession"', "[override]"), output
    assert found("context", 'Return type "str" of "context"', '"KvContext"', "[override]"), output
    # a session type that is no ProtocolSession; a protocol's options read back as their own type
    assert found("type-argument", '"ProtocolSession"', "[type-var]"), output
    assert found("own_options", "[return-value]"), output
    assert len(errors) == 6, output


def test_option_values_are_read_and_set_by_their_declared_names() -> None:
    """A protocol reads its options by the names it declared, and a self-test sets its target the same
    way; the run's raw values (the plugin's and the command's ``dest`` keys) see the change."""
    raw: dict[str, object] = {
        "amp_mcp_command": "srv --stdio",
        "amp_api_key": ["a=1", "b=2"],
        "amp_seed": None,
    }
    values = OptionValues(raw)
    assert values["mcp-command"] == values.text("mcp-command") == "srv --stdio"
    assert values.texts("api-key") == ["a=1", "b=2"] and values.texts("seed") == []
    assert values.text("seed") is None and not values.flag("keep-cells")
    assert sorted(values) == ["api-key", "mcp-command", "seed"]
    values["base-url"] = "http://127.0.0.1:1"
    values.update_values(allow_global_effects=True)
    assert raw["amp_base_url"] == "http://127.0.0.1:1" and raw["amp_allow_global_effects"] is True
    assert OptionSpec("base-url", "").dest == "amp_base_url"


class BareSession(ProtocolSession):
    @property
    def target_label(self) -> str:
        return "bare"


class BareProtocol(Protocol[None, BareSession, CheckContext[BareSession]]):
    """A protocol over no transport of the engine's: the base record alone."""

    name: ClassVar[str] = "bare"

    def parse_options(self, values: OptionValues) -> None:
        return None

    def open_session(
        self, run: Run, *, http: httpx.Client | None, plugins: Sequence[object] = ()
    ) -> BareSession:
        session = BareSession()
        session.run = run
        return session

    def context(self, session: BareSession, spec: CheckSpec) -> CheckContext[BareSession]:
        return CheckContext(session.run, spec, session)


def test_the_base_record_assumes_no_transport_and_the_http_layer_declares_its_own() -> None:
    """``--base-url``, ``--keep-cells`` and the fuzz options are declared by what reads them, not in the
    engine's shared list; a protocol that is not HTTP has no base URL, no ``/health``."""
    from amp_conformance.engine import registry
    from amp_conformance.engine.http import BASE_URL, HttpProtocol
    from amp_conformance.engine.options import OPTION_SPECS
    from amp_conformance.fuzz.options import FUZZ_OPTIONS
    from amp_conformance.plugin import all_option_specs

    shared = {spec.name for spec in OPTION_SPECS}
    assert not shared & {"base-url", "keep-cells", "no-fuzz", "openapi", "fuzz-examples", "fuzz-seconds"}
    assert {spec.name for spec in FUZZ_OPTIONS} == {"no-fuzz", "openapi", "fuzz-examples", "fuzz-seconds"}
    for protocol in registry.protocols():
        assert isinstance(protocol, HttpProtocol)
        assert protocol.transport_options[0].name == BASE_URL.name
        assert "keep-cells" in {spec.name for spec in protocol.options}
    names = [spec.name for spec in all_option_specs()]
    assert len(names) == len(set(names)) and names[0] == "base-url"
    assert {"keep-cells", "no-fuzz", "fuzz-seconds", "mcp-command"} <= set(names)

    bare = BareProtocol()
    given = OptionValues({"amp_base_url": "http://127.0.0.1:1"})
    assert bare.declared_options == () and bare.target_url(given) is None
    assert not bare.has_target(given) and bare.is_self_test(given)
    with pytest.raises(ValueError, match="no HTTP transport"):
        bare.health_url("http://127.0.0.1:1")
    amp01 = registry.get(registry.DEFAULT_PROTOCOL)
    assert amp01.target_url(given) == "http://127.0.0.1:1" and amp01.has_target(given)
    assert not amp01.is_self_test(given) and amp01.is_self_test(OptionValues({}))
