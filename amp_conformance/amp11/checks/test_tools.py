"""tools/list: the verbs, their schemas, the §3.4 annotation table, and the tool-result shape."""

from __future__ import annotations

from typing import Any

from amp_conformance.amp11.channels import MCP
from amp_conformance.amp11.checks._support import annotations_of
from amp_conformance.amp11.context import Amp11Context
from amp_conformance.amp11.schemas import VERBS, VERBS_CORE, VERBS_FULL, schema_problems
from amp_conformance.engine.marking import check
from amp_conformance.engine.text import shown

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
#: spec §3.4 verb table: readOnly, destructive, idempotent, openWorld
ANNOTATIONS: dict[str, tuple[bool, bool, bool, bool]] = {
    "amp.encode": (False, False, False, False),
    "amp.recall": (True, False, True, False),
    "amp.forget": (False, True, True, False),
    "amp.stats": (True, False, True, False),
    "amp.consolidate": (False, False, False, True),
    "amp.pin": (False, False, True, False),
    "amp.export": (True, False, True, False),
    "amp.import": (False, False, False, False),
}


def _tools(amp: Amp11Context) -> dict[str, dict[str, Any]]:
    amp.require(MCP)
    return amp.session.tools(amp.evidence.exchanges)


def _listed(amp: Amp11Context, verb: str) -> dict[str, Any]:
    tools = _tools(amp)
    if verb not in tools:
        if verb in VERBS_FULL and amp.session.declared_level != "full":
            amp.skip(f"{verb} is not listed by this Core server")
        amp.fail(f"tools/list does not list {verb}", amp.session.tools_exchange)
    return tools[verb]


@check("AMP11-TOOLS-01")
def test_core_verbs_are_listed(amp: Amp11Context) -> None:
    """tools/list lists amp.encode, amp.recall, amp.forget and amp.stats."""
    tools = _tools(amp)
    missing = [verb for verb in VERBS_CORE if verb not in tools]
    amp.expect(not missing, f"tools/list lacks {', '.join(missing)}", amp.session.tools_exchange)


@check("AMP11-TOOLS-02")
def test_full_verbs_are_listed_by_a_full_server(amp: Amp11Context) -> None:
    """A full server also lists amp.consolidate, amp.pin, amp.export and amp.import."""
    tools = _tools(amp)
    if amp.session.declared_level != "full":
        amp.skip(f"the server declares level {shown(amp.session.declared_level)}, not full")
    missing = [verb for verb in VERBS_FULL if verb not in tools]
    amp.expect(not missing, f"a full server does not list {', '.join(missing)}", amp.session.tools_exchange)


@check("AMP11-TOOLS-03")
def test_tool_entries_have_name_description_and_schema(amp: Amp11Context) -> None:
    """Every tool entry has a name, a description and an object inputSchema that is a valid JSON Schema."""
    for name, tool in _tools(amp).items():
        amp.expect(
            isinstance(tool.get("description"), str) and tool["description"].strip(),
            f"{name} has no description",
            amp.session.tools_exchange,
        )
        schema = tool.get("inputSchema")
        problems = schema_problems(schema)
        amp.expect(not problems, f"{name} inputSchema: {'; '.join(problems)}", amp.session.tools_exchange)
        assert isinstance(schema, dict)
        amp.expect(schema.get("type") == "object", f"{name} inputSchema is not type object", amp.latest)


@check("AMP11-TOOLS-04")
def test_every_verb_publishes_four_boolean_hints(amp: Amp11Context) -> None:
    """Every listed AMP verb publishes annotations with the four boolean hints."""
    for name in [n for n in _tools(amp) if n in VERBS]:
        annotations = annotations_of(_tools(amp)[name])
        absent = [h for h in HINTS if not isinstance(annotations.get(h), bool)]
        amp.expect(
            not absent, f"{name} annotations lack boolean {', '.join(absent)}", amp.session.tools_exchange
        )


def _expect_annotations(amp: Amp11Context, verb: str) -> None:
    annotations = annotations_of(_listed(amp, verb))
    for hint, wanted in zip(HINTS, ANNOTATIONS[verb], strict=True):
        got = annotations.get(hint)
        amp.expect(
            got is wanted,
            f"{verb} {hint} is {shown(got)}; the §3.4 table says {str(wanted).lower()}",
            amp.session.tools_exchange,
            expected=str(wanted).lower(),
        )


@check("AMP11-TOOLS-05")
def test_encode_annotations(amp: Amp11Context) -> None:
    """amp.encode: not read-only, not destructive, not idempotent, closed world."""
    _expect_annotations(amp, "amp.encode")


@check("AMP11-TOOLS-06")
def test_recall_annotations(amp: Amp11Context) -> None:
    """amp.recall: read-only, idempotent."""
    _expect_annotations(amp, "amp.recall")


@check("AMP11-TOOLS-07")
def test_forget_annotations(amp: Amp11Context) -> None:
    """amp.forget: destructive and idempotent (the only destructive verb)."""
    _expect_annotations(amp, "amp.forget")


@check("AMP11-TOOLS-08")
def test_stats_annotations(amp: Amp11Context) -> None:
    """amp.stats: read-only, idempotent."""
    _expect_annotations(amp, "amp.stats")


@check("AMP11-TOOLS-09")
def test_consolidate_annotations(amp: Amp11Context) -> None:
    """amp.consolidate: open world, not idempotent."""
    _expect_annotations(amp, "amp.consolidate")


@check("AMP11-TOOLS-10")
def test_pin_annotations(amp: Amp11Context) -> None:
    """amp.pin: idempotent, not destructive."""
    _expect_annotations(amp, "amp.pin")


@check("AMP11-TOOLS-11")
def test_export_annotations(amp: Amp11Context) -> None:
    """amp.export: read-only, idempotent."""
    _expect_annotations(amp, "amp.export")


@check("AMP11-TOOLS-12")
def test_import_annotations(amp: Amp11Context) -> None:
    """amp.import: no hint set."""
    _expect_annotations(amp, "amp.import")


@check("AMP11-TOOLS-13")
def test_input_schemas_offer_scope_and_flat_agent_id(amp: Amp11Context) -> None:
    """Each verb's inputSchema declares both scope and the legacy agent_id."""
    for name in [n for n in _tools(amp) if n in VERBS]:
        schema = _tools(amp)[name].get("inputSchema")
        properties = schema.get("properties") if isinstance(schema, dict) else None
        properties = properties if isinstance(properties, dict) else {}
        missing = [key for key in ("scope", "agent_id") if key not in properties]
        amp.expect(not missing, f"{name} inputSchema does not declare {', '.join(missing)}", amp.latest)


@check("AMP11-TOOLS-14")
def test_tool_results_carry_the_output_as_json_text(amp: Amp11Context) -> None:
    """A successful tools/call returns the output as JSON text (structuredContent equal when present)."""
    amp.require(MCP)
    scope = amp.scope()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("amp.encode", {"scope": scope, "content": f"shape probe {amp.token()}", "force": True}),
        ("amp.stats", {"scope": scope}),
        ("amp.recall", {"scope": scope, "query": "shape probe"}),
    ]
    for verb, arguments in calls:
        result = amp.call(verb, arguments, on=MCP)
        message = getattr(result.exchange, "message", None) or {}
        if not result.problems or "error" in message:
            # a refusal (a JSON-RPC error frame, judged by the ERR checks) has no tool result to judge:
            # the verb's step broke
            amp.served(result)
        amp.expect(not result.problems, f"{verb} tool result: {'; '.join(result.problems)}", result)
        if verb == "amp.encode" and isinstance((result.value or {}).get("id"), str):
            amp.session.remember(MCP, {"scope": scope, "id": (result.value or {})["id"]})
