"""Property-based fuzzing of the AMP v1.1 verbs from their input schemas, over MCP and over REST.

Schema-valid arguments are drawn by hypothesis (seeded by the run's seed) from each verb's
``inputSchema`` (``tools/list``; the pinned ``verbs.schema.json`` when the server publishes none, and
always over REST): they must get a result valid against the verb's output schema, or a documented AMP
error in its §3.5 transport form, never ``-32603``, a bare 5xx or a dropped frame. Failures shrink
(hypothesis) to a minimal example. Schema-invalid arguments are derived one member at a time from a
valid example (a missing required member, a wrong type, a value outside ``minimum``/``maximum``/
``minLength``/``maxLength``/``enum``, an unknown member where ``additionalProperties`` is false): they
must get ``invalid_request`` mapped as §3.5 says.

Every call uses a fresh scope of the run (``session.unique``): generated scopes are replaced, so
fuzzing never reads or writes outside the run; what it stored is remembered for the run's cleanup.

The generator is a small one for the JSON Schema subset ``verbs.schema.json`` uses (objects, strings,
integers, numbers, booleans, arrays, ``enum``/``const``, ``$ref``, ``anyOf``/``oneOf``), each value
checked by jsonschema afterwards: hypothesis-jsonschema 0.23.1, the maintained generator, does not
run with the hypothesis release schemathesis 4 needs (``AttributeError: 'many' object has no attribute
'more'``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from amp_conformance.amp11.channels import ERROR_MAPPING, MCP, REST, NotOnChannel, VerbResult
from amp_conformance.amp11.mcp import McpExchange
from amp_conformance.amp11.schemas import VERBS, VERBS_FULL, output_problems, verbs_document
from amp_conformance.amp11.session import Amp11Session
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.long_lines import terminal_line
from amp_conformance.engine.outcomes import ServerUnavailable, ToolError
from amp_conformance.engine.text import shown

SCOPE_MEMBERS: Final = ("scope", "agent_id")
UNKNOWN_MEMBER: Final = "amp11_fuzz_unknown_member"
SCHEMA_ROWS: Final = {verb: f"AMP11-SCHEMA-0{n}" for n, verb in enumerate(VERBS, start=1)}
#: (verb, member) -> the catalogue row that asks for invalid_request when that member is invalid.
INVALID_ROWS: Final = {
    ("amp.recall", "query"): "AMP11-REC-09",
    ("amp.recall", "top_k"): "AMP11-REC-09",
    ("amp.recall", "filters"): "AMP11-REC-10",
    ("amp.encode", "content"): "AMP11-ENC-04",
    ("amp.encode", "force"): "AMP11-ENC-09",
    ("amp.encode", "metadata"): "AMP11-ENC-09",
    ("amp.encode", UNKNOWN_MEMBER): "AMP11-ENC-09",
    ("amp.forget", "id"): "AMP11-FGT-03",
    ("amp.pin", "id"): "AMP11-PIN-04",
    ("amp.consolidate", "depth"): "AMP11-CONS-03",
    ("amp.export", "page_size"): "AMP11-EXP-06",
    ("amp.export", "cursor"): "AMP11-EXP-06",
    ("amp.import", "on_conflict"): "AMP11-IMP-11",
    ("amp.import", "scope_remap"): "AMP11-IMP-11",
}
#: Statuses the OpenAPI file documents for the verb routes (success, and the §3.5 error statuses).
REST_STATUSES: Final = frozenset({200, 201, 202, 204} | {status for _, status in ERROR_MAPPING.values()})


@dataclass
class Finding:
    """One problem, with the (shrunk) arguments and the frames or HTTP exchange that show it."""

    kind: str  # "valid" (schema-valid arguments) or "invalid" (a derived schema-invalid one)
    channel: str
    verb: str
    requirement: str | None  # None: the schema says invalid, but no catalogue row requires a refusal
    message: str
    arguments: dict[str, Any]
    exchange: Exchange | None = None

    def frame(self) -> dict[str, Any] | None:
        """The exact ``tools/call`` frame sent (MCP)."""
        if isinstance(self.exchange, McpExchange) and self.exchange.request_body:
            try:
                sent = json.loads(self.exchange.request_body)
            except ValueError:
                return None
            return sent if isinstance(sent, dict) else None
        return None

    def transcript(self) -> list[dict[str, Any]]:
        """The frames (or request and response) of the shrunk example, replayable."""
        if self.exchange is None:
            return []
        if isinstance(self.exchange, McpExchange):
            sent = (self.exchange.request_body or b"").decode("utf-8", errors="replace")
            return [{"sent": sent}, *({"received": line} for line in self.exchange.received)]
        return [self.exchange.as_dict()]

    def describe(self) -> str:
        arguments = json.dumps(self.arguments)[:300]
        cited = self.requirement or "(schema)"
        line = f"- {cited} {self.verb} over {self.channel}: {self.message}\n    arguments: {arguments}"
        frame = self.frame()
        if frame is not None:
            line += f"\n    frame: {json.dumps(frame)[:400]}"
        elif self.exchange is not None:
            line += f"\n    reproduce: {terminal_line(self.exchange.curl())}"
        return line


@dataclass
class FuzzRun:
    channel: str
    seed: int
    findings: list[Finding] = field(default_factory=list)
    examples: int = 0
    seconds: float = 0.0
    verbs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unrouted: list[str] = field(default_factory=list)
    """Full verbs a Core REST server has no route for (404/405 without an AMP error): not fuzzed further."""


# -- generation -------------------------------------------------------------------------------------


def _resolve(schema: Any, defs: dict[str, Any]) -> Any:
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        name = schema["$ref"].rsplit("/", 1)[-1]
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**defs.get(name, {}), **rest}
    return schema


def strategy(schema: Any, defs: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of ``schema`` (the subset verbs.schema.json uses; callers filter with a validator)."""
    schema = _resolve(schema, defs)
    if not isinstance(schema, dict) or schema is True:
        return st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=8))
    if "const" in schema:
        return st.just(schema["const"])
    if isinstance(schema.get("enum"), list):
        return st.sampled_from(schema["enum"])
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and "type" not in schema and "properties" not in schema:
            return st.one_of(*(strategy(option, defs, depth) for option in options))
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of(*(strategy({**schema, "type": k}, defs, depth) for k in kind))
    if kind == "string":
        if schema.get("format") == "date-time":
            return st.datetimes().map(lambda d: d.replace(microsecond=0).isoformat() + "Z")
        low = int(schema.get("minLength", 0))
        high = int(schema.get("maxLength", low + 24))
        return st.text(min_size=low, max_size=max(low, high))
    if kind == "integer":
        minimum, maximum = schema.get("minimum"), schema.get("maximum")
        start = int(minimum) if minimum is not None else -1000
        return st.integers(start, int(maximum) if maximum is not None else start + 1000)
    if kind == "number":
        return st.floats(schema.get("minimum", -1e6), schema.get("maximum", 1e6), allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = strategy(schema.get("items", {}), defs, depth + 1) if depth < 3 else st.none()
        return st.lists(items, min_size=int(schema.get("minItems", 0)), max_size=3)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if not properties:  # a free-form bag (metadata)
            values = st.one_of(st.text(max_size=8), st.integers(-5, 5), st.booleans())
            return st.dictionaries(st.text(min_size=1, max_size=8), values, max_size=3)
        required = [name for name in schema.get("required", []) if name in properties]
        optional = [name for name in properties if name not in required]
        fixed = {name: strategy(properties[name], defs, depth + 1) for name in required}
        extra = {name: strategy(properties[name], defs, depth + 1) for name in optional}
        return st.fixed_dictionaries(fixed, optional=extra) if depth < 4 else st.fixed_dictionaries(fixed)
    return st.one_of(st.none(), st.text(max_size=8))


def _unscoped(schema: dict[str, Any]) -> dict[str, Any]:
    """The input schema without its scope members (the fuzzer sets the run's own scope)."""
    properties = {k: v for k, v in (schema.get("properties") or {}).items() if k not in SCOPE_MEMBERS}
    stripped = {k: v for k, v in schema.items() if k not in ("allOf", "anyOf", "oneOf")}
    required = [name for name in schema.get("required", []) if name not in SCOPE_MEMBERS]
    return {**stripped, "properties": properties, "required": required}


def input_schema(verb: str, published: Any) -> dict[str, Any]:
    """The verb's input schema: the published ``inputSchema`` when it is an object, else the pinned one,
    with the pinned ``$defs`` available to its references."""
    document = verbs_document()
    chosen = published if isinstance(published, dict) else document["verbs"][verb]["input"]
    return {"$defs": {**document["$defs"], **(chosen.get("$defs") or {})}, **chosen}


# -- judging ----------------------------------------------------------------------------------------


def _error_problem(result: VerbResult) -> tuple[str, str] | None:
    """(requirement, message) when an error is not a documented AMP error in its transport form."""
    if result.channel == MCP:
        if result.transport_code == -32603:
            return "AMP11-ERR-05", "answered JSON-RPC -32603 (internal error), not an AMP error"
        if result.error_code is None:
            return "AMP11-ERR-05", f"error {result.transport_code} carries no AmpErrorData amp_error_code"
    else:
        status = result.transport_code or 0
        if status >= 500 and status != 501 and result.error_code != "backend_error":
            return "AMP11-REST-11", f"HTTP {status} without an AMP backend_error body"
        if status not in REST_STATUSES:
            return "AMP11-REST-10", f"HTTP {status} is not a status the OpenAPI file documents"
        if result.error_code is None:
            return "AMP11-ERR-06", f"HTTP {status} error body carries no AMP error code"
    if result.error_code not in ERROR_MAPPING:
        return "AMP11-ERR-07", f"amp_error_code {shown(result.error_code)} is not one of §3.5"
    rpc_codes, status = ERROR_MAPPING[result.error_code]
    if result.channel == MCP and result.transport_code not in rpc_codes:
        return "AMP11-ERR-07", f"{result.error_code} came with JSON-RPC code {result.transport_code}"
    if result.channel == REST and result.transport_code != status:
        return "AMP11-ERR-07", f"{result.error_code} came with HTTP {result.transport_code}"
    return None


def judge_valid(result: VerbResult) -> tuple[str, str] | None:
    """Schema-valid arguments: a valid result or a documented error."""
    if result.ok:
        problems = output_problems(result.verb, result.value)
        if problems:
            row = (
                "AMP11-REST-10" if result.channel == REST else SCHEMA_ROWS.get(result.verb, "AMP11-SCHEMA-01")
            )
            return row, "the result does not match the output schema: " + "; ".join(problems[:3])
        return None
    return _error_problem(result)


def judge_invalid(result: VerbResult, member: str) -> tuple[str | None, str] | None:
    """Schema-invalid arguments: ``invalid_request`` in its §3.5 form."""
    row = INVALID_ROWS.get((result.verb, member))
    if result.ok:
        return row, f"accepted: {json.dumps(result.value, ensure_ascii=False)[:160]}"
    problem = _error_problem(result)
    if problem is not None:
        return problem
    if result.error_code == "not_supported":
        return None  # a Full verb a Core server does not serve: refused before its arguments are read
    if result.error_code != "invalid_request":
        return row, f"answered {result.error_code} ({result.transport_code}), not invalid_request"
    return None


# -- schema-invalid variants ---------------------------------------------------------------------------

_WRONG_TYPE: Final = {
    "string": 12345,
    "integer": "1",
    "number": "1.5",
    "boolean": "yes",
    "object": "not-an-object",
    "array": "not-an-array",
}


def invalid_variants(schema: dict[str, Any], base: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(member, how, arguments) variants of ``base`` that break ``schema`` in one member each."""
    defs = schema.get("$defs", {})
    found: list[tuple[str, str, dict[str, Any]]] = []
    properties = schema.get("properties") or {}
    for name in schema.get("required", []):
        if name in base and name not in SCOPE_MEMBERS:
            found.append((name, f"required {name} missing", {k: v for k, v in base.items() if k != name}))
    for name, raw in properties.items():
        if name in SCOPE_MEMBERS:
            continue
        prop = _resolve(raw, defs)
        if not isinstance(prop, dict):
            continue
        kind = prop.get("type")
        if isinstance(kind, str) and kind in _WRONG_TYPE:
            found.append((name, f"{name} of the wrong type", {**base, name: _WRONG_TYPE[kind]}))
        if isinstance(prop.get("minimum"), int | float):
            found.append((name, f"{name} below its minimum", {**base, name: prop["minimum"] - 1}))
        if isinstance(prop.get("maximum"), int | float):
            found.append((name, f"{name} above its maximum", {**base, name: prop["maximum"] + 1}))
        if isinstance(prop.get("minLength"), int) and prop["minLength"] > 0:
            found.append((name, f"{name} shorter than minLength", {**base, name: ""}))
        if isinstance(prop.get("maxLength"), int):
            found.append(
                (name, f"{name} longer than maxLength", {**base, name: "x" * (prop["maxLength"] + 1)})
            )
        if isinstance(prop.get("enum"), list):
            found.append((name, f"{name} outside its enum", {**base, name: "amp11-fuzz-not-listed"}))
    if schema.get("additionalProperties") is False:
        found.append((UNKNOWN_MEMBER, "an unknown member", {**base, UNKNOWN_MEMBER: 1}))
    validator = Draft202012Validator(schema)
    return [variant for variant in found if not validator.is_valid(variant[2])]


def _minimal(schema: dict[str, Any]) -> dict[str, Any]:
    """A small valid-looking argument object: its required members (scope set by the caller)."""
    defs = schema.get("$defs", {})
    out: dict[str, Any] = {}
    for name in schema.get("required", []):
        prop = _resolve((schema.get("properties") or {}).get(name, {}), defs)
        if name in SCOPE_MEMBERS or not isinstance(prop, dict):
            continue
        if isinstance(prop.get("enum"), list):
            out[name] = prop["enum"][0]
        elif prop.get("type") == "integer":
            out[name] = max(1, int(prop.get("minimum", 1)))
        elif prop.get("type") == "boolean":
            out[name] = False
        else:
            out[name] = "amp11 fuzz"
    return out


# -- running ----------------------------------------------------------------------------------------


def _carried(result: VerbResult, member: str, how: str) -> bool:
    """Whether the REST request carried the broken member (a route that takes its arguments in the path
    or query, or an NDJSON body, has no place for an unknown member, and no ``ndjson`` name)."""
    if result.channel != REST:
        return True
    if result.verb == "amp.import" and member == "ndjson":
        return False
    if how.startswith("required"):
        return True
    exchange = result.exchange
    body = (getattr(exchange, "request_body", b"") or b"").decode("utf-8", "replace")
    text = f"{getattr(exchange, 'url', '')} {body}"
    return member in text


class _Found(AssertionError):
    def __init__(
        self, requirement: str | None, message: str, arguments: dict[str, Any], result: VerbResult | None
    ):
        super().__init__(message)
        self.requirement = requirement
        self.message = message
        self.arguments = arguments
        self.result = result


class VerbFuzzer:
    """Fuzzes every verb of one channel; bounded by ``examples`` per verb and ``seconds`` overall."""

    def __init__(
        self,
        session: Amp11Session,
        channel: str,
        *,
        seed: int,
        examples: int,
        seconds: float,
        scope: Callable[[], dict[str, str]] | None = None,
        on_requests: Callable[[int], None] | None = None,
    ) -> None:
        self.session = session
        self.on_requests = on_requests
        self.channel = channel
        self.run = FuzzRun(channel=channel, seed=seed)
        self.examples = max(1, examples)
        self.seconds = seconds
        self.scope = scope or (lambda: {"agent_id": session.unique("fuzz")})
        self.end = 0.0

    def _call(self, verb: str, arguments: dict[str, Any]) -> tuple[VerbResult | None, str | None]:
        log: list[Exchange] = []
        before = self.session.requests
        try:
            channel = self.session.channel(self.channel, log, None)
            result = channel.call(verb, arguments)
        except NotOnChannel:
            return None, None
        except ServerUnavailable:
            raise
        except ToolError as exc:  # a dropped frame, a timeout, a refused connection
            return None, f"no answer: {exc}"
        finally:
            sent = self.session.requests - before
            self.run.examples += sent
            if self.on_requests is not None:
                self.on_requests(sent)
        if (
            self.channel == REST
            and verb in VERBS_FULL
            and result.transport_code in (404, 405)
            and result.error_key is None
        ):
            if verb not in self.run.unrouted:  # a Core server without the route (as the Full checks skip)
                self.run.unrouted.append(verb)
            return None, None
        if result.ok and verb == "amp.encode" and isinstance(result.value, dict):
            memory_id = result.value.get("id")
            if isinstance(memory_id, str):
                self.session.remember(self.channel, {"scope": arguments.get("scope"), "id": memory_id})
        return result, None

    def verbs(self) -> dict[str, Any]:
        """Verb -> published input schema (None: use the pinned one)."""
        if self.channel == MCP:
            tools = self.session.tools()
            return {
                name: tool.get("inputSchema")
                for name, tool in tools.items()
                if name in verbs_document()["verbs"]
            }
        return dict.fromkeys(VERBS)

    def fuzz(self) -> FuzzRun:
        started = time.monotonic()
        self.end = started + self.seconds
        try:
            for verb, published in self.verbs().items():
                if time.monotonic() >= self.end:
                    self.run.errors.append(f"the budget ran out before {verb} was fuzzed")
                    continue
                self.run.verbs.append(verb)
                schema = input_schema(verb, published)
                base = self._valid_phase(verb, schema)
                self._invalid_phase(verb, schema, base)
        except ServerUnavailable as exc:
            self.run.errors.append(str(exc))
        self.run.seconds = time.monotonic() - started
        return self.run

    def _routable(self, arguments: dict[str, Any]) -> bool:
        """Over REST an id is a path segment: "/" or a dot segment would reach another route (or none),
        which says nothing about the verb (routing is the framework's, as C-29 says for v0.1)."""
        memory_id = arguments.get("id")
        if self.channel != REST or not isinstance(memory_id, str):
            return True
        return "/" not in memory_id and memory_id.strip(".") != ""

    def _with_scope(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"scope": self.scope(), **{k: v for k, v in arguments.items() if k not in SCOPE_MEMBERS}}

    def _valid_phase(self, verb: str, schema: dict[str, Any]) -> dict[str, Any]:
        unscoped = _unscoped(schema)
        validator = Draft202012Validator(schema)
        generated = strategy(unscoped, schema.get("$defs", {})).filter(
            lambda value: (
                isinstance(value, dict)
                and self._routable(value)
                and validator.is_valid(self._with_scope(value))
            )
        )
        accepted: list[dict[str, Any]] = []

        @settings(
            max_examples=self.examples,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            phases=(Phase.generate, Phase.shrink),
            report_multiple_bugs=False,
        )
        @hypothesis_seed(self.run.seed)
        @given(generated)
        def body(value: dict[str, Any]) -> None:
            if time.monotonic() >= self.end or verb in self.run.unrouted:
                return
            arguments = self._with_scope(value)
            result, failure = self._call(verb, arguments)
            if failure is not None:
                raise _Found(
                    "AMP11-INIT-07" if self.channel == MCP else "AMP11-REST-11", failure, arguments, None
                )
            if result is None:
                return
            problem = judge_valid(result)
            if problem is not None:
                raise _Found(problem[0], problem[1], arguments, result)
            if result.ok and not accepted:
                accepted.append(value)

        try:
            body()
        except _Found as found:
            self._add("valid", verb, found.requirement, found.message, found.arguments, found.result)
        except Exception as exc:  # a generator problem is the tool's, not the server's
            self.run.errors.append(f"{verb}: cannot generate arguments: {type(exc).__name__}: {exc}"[:300])
        return accepted[0] if accepted else _minimal(schema)

    def _invalid_phase(self, verb: str, schema: dict[str, Any], base: dict[str, Any]) -> None:
        for member, how, arguments in invalid_variants(schema, self._with_scope(base)):
            if time.monotonic() >= self.end or verb in self.run.unrouted:
                return
            arguments = {**arguments, "scope": self.scope()}
            result, failure = self._call(verb, arguments)
            if failure is not None:
                req = "AMP11-INIT-07" if self.channel == MCP else "AMP11-REST-11"
                self._add("invalid", verb, req, f"{how}: {failure}", arguments, None)
                continue
            if result is None or not _carried(result, member, how):
                continue
            problem = judge_invalid(result, member)
            if problem is not None:
                self._add("invalid", verb, problem[0], f"{how}: {problem[1]}", arguments, result)

    def _add(
        self,
        kind: str,
        verb: str,
        requirement: str | None,
        message: str,
        arguments: dict[str, Any],
        result: VerbResult | None,
    ) -> None:
        exchange = result.exchange if result is not None else None
        self.run.findings.append(Finding(kind, self.channel, verb, requirement, message, arguments, exchange))
