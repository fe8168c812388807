"""``Amp11Context`` (the v1.1 checks' ``amp`` fixture): channels, fresh scopes, verb calls, verdicts."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

from amp_conformance.amp11.channels import ERROR_MAPPING, MCP, REST, NotOnChannel, Rows, Value, VerbResult
from amp_conformance.amp11.schemas import VERBS_FULL, output_problems
from amp_conformance.amp11.session import Amp11Session
from amp_conformance.engine.context import CheckContext
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import CheckFailure, ToolError, TransportFailure
from amp_conformance.engine.text import shown

if TYPE_CHECKING:
    from amp_conformance.engine.run import Run
    from amp_conformance.engine.spec import CheckSpec

LEVEL_REQUIREMENT = "AMP11-INIT-05"
BACKEND_ERROR_REQUIREMENT = "AMP11-ERR-04"
#: The requirement a verb breaks when it fails as a step of another check (the engine reports such a
#: check as *blocked* under this root cause; a check citing it fails outright).
STEP_REQUIREMENTS = {
    "amp.encode": "AMP11-ENC-01",
    "amp.recall": "AMP11-REC-01",
    "amp.forget": "AMP11-FGT-01",
    "amp.stats": "AMP11-STAT-01",
    "amp.consolidate": "AMP11-CONS-01",
    "amp.pin": "AMP11-PIN-01",
    "amp.export": "AMP11-EXP-01",
    "amp.import": "AMP11-IMP-02",
}


class Amp11Context(CheckContext[Amp11Session]):
    """The per-check API of AMP v1.1: the engine's verdicts plus channels, scopes and verb calls.
    Every call made through it is recorded as the check's evidence."""

    explicit_evidence = True

    def __init__(self, run: Run, spec: CheckSpec, session: Amp11Session):
        super().__init__(run, spec, session)
        self.deadline = time.monotonic() + (spec.deadline or session.target.deadline)
        self._encoded: set[str] = set()
        """Ids this check's encodes returned: a reconciled encode never adopts one of them."""

    # -- channels ------------------------------------------------------------------------------------

    @property
    def channels(self) -> tuple[str, ...]:
        """The channels this run targets (``mcp``, ``rest`` or both)."""
        return self.session.target.channels()

    def require(self, *channels: str) -> None:
        """Skip unless every one of ``channels`` is targeted."""
        missing = [c for c in channels if c not in self.channels]
        if missing:
            self.skip(f"needs the {' and '.join(missing)} channel (give {_how(missing[0])})")

    def other(self, channel: str) -> str:
        return REST if channel == MCP else MCP

    def call(self, verb: str, arguments: dict[str, Any], *, on: str) -> VerbResult:
        """Call ``verb`` over channel ``on``; arguments a channel cannot carry skip the check."""
        try:
            return self.call_or_raise(verb, arguments, on=on)
        except NotOnChannel as exc:
            self.skip(f"{verb} over {on}: {exc}")

    def judge_backend_error(self, result: VerbResult) -> None:
        """A ``backend_error`` cannot be provoked, so each one is judged where it is seen (AMP11-ERR-04,
        whatever the order of the checks): a wrong transport code is one finding under ERR-04, reported
        by the first check that saw it; any later check that meets one is ``blocked`` under it."""
        problems = self.mapping_problems(result) if result.error_code == "backend_error" else []
        if problems:
            self.precondition_failed(
                f"{result.verb} over {result.channel}: {'; '.join(problems)}",
                result,
                step=result.verb,
                requirement=BACKEND_ERROR_REQUIREMENT,
                expected="backend_error as JSON-RPC -32000 / HTTP 500 (§3.5)",
            )

    def try_call(self, verb: str, arguments: dict[str, Any], *, on: str) -> VerbResult | None:
        """``call``, or None with a note when channel ``on`` cannot carry the arguments (one probe of
        several is left out; the check goes on with the others)."""
        try:
            return self.call_or_raise(verb, arguments, on=on)
        except NotOnChannel as exc:
            self.note(f"{verb} over {on} not sent: {exc}")
            return None

    def call_or_raise(self, verb: str, arguments: dict[str, Any], *, on: str) -> VerbResult:
        """``call`` letting NotOnChannel through."""
        channel = self.session.channel(on, self.evidence.exchanges, self.deadline)
        result = channel.call(verb, arguments)
        if result.error_code == "backend_error" or result.transport_code in (500, -32000):
            self.session.backend_errors.append(result)
            self.judge_backend_error(result)
        return result

    def ok(self, verb: str, arguments: dict[str, Any], *, on: str, what: str = "") -> Value:
        """Call ``verb`` and insist on success (a precondition unless the check is about this call)."""
        return self.served(self.call(verb, arguments, on=on), what)

    def served(self, result: VerbResult, what: str = "") -> Value:
        """The value of a call the check needs to have succeeded before it can judge anything: a
        refusal is the verb's own requirement broken (the check citing it fails; any other is
        ``blocked`` under it), never a finding of a check whose assertion never ran (issue 20 §2)."""
        if result.error_code == "backend_error" and result not in self.session.backend_errors:
            self.session.backend_errors.append(result)  # a reply the check parsed itself
            self.judge_backend_error(result)  # a wrong code: blocked under AMP11-ERR-04
        self.full_verb_answer(result)
        if not result.ok:
            label = f"{what}: " if what else ""
            self.step_failed(result.verb, f"{label}{result.describe()}", result)
        assert result.value is not None
        return Value(result.value, result.exchange)

    def blocked_if_scope_form_refused(self, result: VerbResult) -> None:
        """``result`` is an error the check did not expect: when this channel refuses even a plain
        forced encode in the scope form, that refusal (AMP11-ENC-01, reported once by its own check) is
        the root cause, and this check is ``blocked`` under it instead of filing it again."""
        if result.ok:
            return
        control = self.session.scope_form_controls.get(result.channel)
        if control is None:
            scope = self.scope("control")
            arguments = {"scope": scope, "content": f"scope-form control {self.token()}", "force": True}
            control = self.call("amp.encode", arguments, on=result.channel)
            self.session.scope_form_controls[result.channel] = control
            memory_id = (control.value or {}).get("id")
            if control.ok and isinstance(memory_id, str):
                self.session.remember(result.channel, {"scope": scope, "id": memory_id})
        elif control.exchange is not None and control.exchange not in self.evidence.exchanges:
            self.evidence.exchanges.append(control.exchange)
        if not control.ok:
            self.step_failed(
                "amp.encode",
                f"a plain encode in the scope form is refused over {result.channel} "
                f"({control.describe()}), so {result.describe()} is that refusal again",
                control,
            )

    def full_verb_answer(self, result: VerbResult) -> None:
        """A Full verb refused: skip on a Core server, fail AMP11-INIT-05 on a Full one."""
        how = self.full_verb_refused(result)
        if how:
            level = self.session.declared_level or "unknown"
            self.skip(f"{result.verb} answered {how} over {result.channel} (server level: {level})")

    def full_verb_refused(self, result: VerbResult) -> str | None:
        """How a Full verb was refused (``not_supported``, or a REST route that is not there), or None.

        A server declaring ``full`` may not refuse: that fails AMP11-INIT-05 (conflict C6)."""
        if result.verb not in VERBS_FULL:
            return None
        # a REST server without the route at all (404/405 and no AMP error body) has not implemented it
        unrouted = result.channel == REST and result.transport_code in (404, 405) and result.error_key is None
        # an MCP server that does not list the tool and answers its call as an unknown tool/method
        # (JSON-RPC -32601, no AmpErrorData) has not implemented it either (conflict C6; issue 20 §1)
        unknown_tool = (
            result.channel == MCP
            and result.transport_code == -32601
            and result.error_code is None
            and result.verb not in self.session.tools()
        )
        if not (refused_as_unsupported(result) or unrouted or unknown_tool):
            return None
        if unrouted:
            how = f"HTTP {result.transport_code} (no such route)"
        elif unknown_tool:
            how = "JSON-RPC -32601 (an unlisted, unknown tool)"
        else:
            how = "not_supported"
        if self.session.declared_level == "full":
            raise CheckFailure(
                f"{LEVEL_REQUIREMENT}: the server declares amp_conformance 'full' but {result.verb} "
                f"over {result.channel} answered {how}",
                expected="a Full server serves every Full verb",
                exchange=result.exchange,
                requirements=(LEVEL_REQUIREMENT,),
            )
        return how

    def need_verb(self, verb: str) -> None:
        """Skip a Full-verb check when a Core server does not list the verb over MCP."""
        if verb not in VERBS_FULL or MCP not in self.channels:
            return
        if verb not in self.session.tools() and self.session.declared_level != "full":
            self.skip(f"{verb} is not listed by this Core server (a Full verb)")

    # -- scopes and memories -------------------------------------------------------------------------

    def scope(self, role: str = "a", **refining: str) -> dict[str, str]:
        """A fresh scope no other check (or run) uses: ``{"agent_id": unique}`` plus ``refining`` keys."""
        return {"agent_id": self.session.unique(role), **refining}

    def token(self) -> str:
        """A word that occurs in no other memory, to find one memory by recall."""
        return f"tok{uuid.uuid4().hex[:12]}"

    def encode(
        self, scope: dict[str, Any], content: str, *, on: str, remember: bool = True, **fields: Any
    ) -> str:
        """Store a memory with ``force: true`` (a precondition) and return its id."""
        arguments = {"scope": scope, "content": content, "force": True, **fields}
        try:
            value = self.ok("amp.encode", arguments, on=on, what="storing a memory (precondition)")
        except TransportFailure as lost:
            value = self._reconciled_encode(scope, content, on, lost)
        memory_id = value.get("id")
        if value.get("status") not in ("stored", "duplicate", "queued") or not isinstance(memory_id, str):
            self.step_failed("amp.encode", f"storing a memory answered {json.dumps(value)[:200]}", None)
        self._encoded.add(memory_id)
        if remember:
            self.session.remember(on, {"scope": scope, "id": memory_id})
        else:
            self.session.remember_own(on, {"scope": scope, "id": memory_id})
        return memory_id

    def _reconciled_encode(
        self, scope: dict[str, Any], content: str, on: str, lost: TransportFailure
    ) -> Value:
        """An encode whose answer never came, settled by a recall of its content in its own fresh
        scope: exactly one memory of that content this check did not already get is the one it stored
        (adopted, never sent again). Otherwise ``lost`` goes up (the engine re-runs the check; the
        cleanup sweeps the scope)."""
        try:
            result = self.call_or_raise("amp.recall", {"scope": scope, "query": content, "top_k": 50}, on=on)
        except (ToolError, NotOnChannel):
            raise lost from None
        results = (result.value or {}).get("results")
        known = self._encoded | {str(item.arguments.get("id")) for item in self.session.created}
        found = [
            r["id"]
            for r in results or ()
            if isinstance(r, dict) and r.get("content") == content and isinstance(r.get("id"), str)
        ]
        fresh = [memory_id for memory_id in found if memory_id not in known]
        if len(fresh) != 1:
            raise lost
        connection = self.session.http_connection if on == REST else None
        network = getattr(connection, "network", None)
        if network is not None:
            network.count_reconciled()
        self.note(f"amp.encode over {on} got no answer; a recall found the memory it stored ({fresh[0]})")
        return Value({"id": fresh[0], "status": "stored"}, result.exchange)

    def recall(self, scope: dict[str, Any], query: str, *, on: str, **fields: Any) -> Rows:
        """Recall (a precondition): the results list, each result carrying the recall's exchange."""
        value = self.ok("amp.recall", {"scope": scope, "query": query, "top_k": 50, **fields}, on=on)
        results = value.get("results")
        if not isinstance(results, list):
            self.step_failed("amp.recall", "amp.recall answered no `results` list", None)
        return Rows([Value(r, value.exchange) for r in results if isinstance(r, dict)], value.exchange)

    def find(
        self, scope: dict[str, Any], memory_id: str, query: str, *, on: str, **fields: Any
    ) -> Value | None:
        """The recall result with ``memory_id`` (querying ``query``), or None."""
        return next((r for r in self.recall(scope, query, on=on, **fields) if r.get("id") == memory_id), None)

    def count(self, scope: dict[str, Any], *, on: str) -> int:
        """``memory_count`` of ``scope`` (a precondition)."""
        value = self.ok("amp.stats", {"scope": scope}, on=on, what="amp.stats (precondition)")
        count = value.get("memory_count")
        if type(count) is not int:
            self.step_failed(
                "amp.stats", f"amp.stats answered memory_count {shown(count)}, not an integer", None
            )
        return count

    def export_rows(self, arguments: dict[str, Any], *, on: str) -> tuple[Rows, Value]:
        """One export page: its parsed rows and the whole result (a precondition)."""
        value = self.ok("amp.export", arguments, on=on, what="amp.export")
        text = value.get("ndjson", "")
        rows = Rows([], value.exchange)
        if isinstance(text, str):
            for number, line in enumerate(text.split("\n"), start=1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    self.step_failed(
                        "amp.export", f"MXF line {number} is not JSON: {shown(line[:120])}", None
                    )
        return rows, value

    # -- expectations --------------------------------------------------------------------------------

    @property
    def latest(self) -> Exchange | None:
        """The exchange of the check's latest call, named as the evidence of a verdict about what a
        helper returned without its exchange (``count``, ``find``, the ids of a recall)."""
        return self.evidence.exchanges[-1] if self.evidence.exchanges else None

    def expect_valid(self, result: VerbResult) -> None:
        """The successful result validates against the verb's output schema (SCHEMA rows)."""
        problems = output_problems(result.verb, result.value)
        self.expect(
            not problems,
            f"{result.verb} over {result.channel}: the result does not match its schema: "
            + "; ".join(problems),
            result,
        )

    def expect_error(self, result: VerbResult, codes: str | Iterable[str], what: str) -> None:
        """``result`` is a failure whose ``amp_error_code`` is one of ``codes``."""
        wanted = (codes,) if isinstance(codes, str) else tuple(codes)
        expectation = " or ".join(wanted)
        self.expect(
            not result.ok,
            f"{what} over {result.channel}: expected an error {expectation}, got success "
            f"{json.dumps(result.value, ensure_ascii=False)[:200]}",
            result,
            expected=expectation,
        )
        self.expect(
            result.error_code in wanted,
            f"{what} over {result.channel}: expected amp_error_code {expectation}, "
            f"got {shown(result.error_code)}"
            + (f" ({'; '.join(result.problems)})" if result.problems else ""),
            result,
            expected=expectation,
        )

    def mapping_problems(self, result: VerbResult) -> list[str]:
        """How the transport code of an error disagrees with §3.5 for its ``amp_error_code``."""
        if result.ok or result.error_code not in ERROR_MAPPING:
            return []
        rpc_codes, http_status = ERROR_MAPPING[result.error_code]
        if result.channel == MCP and result.transport_code not in rpc_codes:
            wanted = " or ".join(str(c) for c in rpc_codes)
            return [f"{result.error_code} came with JSON-RPC code {result.transport_code}, not {wanted}"]
        if result.channel == REST and result.transport_code != http_status:
            return [f"{result.error_code} came with HTTP {result.transport_code}, not {http_status}"]
        return []

    def step_failed(self, verb: str, message: str, result: VerbResult | Exchange | None) -> NoReturn:
        """A verb used as a step failed: the check is blocked under that verb's requirement."""
        self.precondition_failed(
            message,
            result,
            step=verb,
            requirement=STEP_REQUIREMENTS[verb],
            expected="a successful result",
        )


def refused_as_unsupported(result: VerbResult) -> bool:
    """``not_supported`` as an error or as an in-band status (conflict C6)."""
    return result.error_code == "not_supported" or (result.value or {}).get("status") == "not_supported"


def _how(channel: str) -> str:
    return "--mcp-command" if channel == MCP else "--base-url"
