"""The two delivery channels of AMP v1.1 behind one call: ``channel.call(verb, arguments) -> VerbResult``.

Checks speak in verb arguments (the MCP form: ``{"scope": {...}, "content": ...}``); the REST channel
maps them onto the routes of Appendix C / the OpenAPI file (scope keys as query parameters for forget,
stats and import, a flat body for pin, NDJSON for export and import). Each result keeps the exchange
it came from, so whatever a check concludes is shown with the frames or the HTTP request behind it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from amp_conformance.amp11.mcp import McpSession
from amp_conformance.amp11.schemas import declared_schema_problems
from amp_conformance.engine.client import Client, Reply
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import ToolError, TransportFailure
from amp_conformance.engine.text import shown

MCP = "mcp"
REST = "rest"
CHANNELS = (MCP, REST)

#: §3.5: AMP error code -> (JSON-RPC codes accepted, HTTP status). -32600 is conflict C2.
ERROR_MAPPING: dict[str, tuple[tuple[int, ...], int]] = {
    "invalid_request": ((-32602, -32600), 400),
    "not_found": ((-32001,), 404),
    "not_supported": ((-32002,), 501),
    "backend_error": ((-32000,), 500),
}
SCOPE_KEYS = ("agent_id", "group_id", "workspace_id", "user_id", "session_id", "app_id", "org_id")
#: The scope keys the pinned ``schema/amp-openapi.yaml`` (commit 26bfc80) lists as parameters of the REST
#: routes that carry the scope outside a JSON body: forget, stats and pin list no ``session_id`` nor
#: ``org_id``; import lists all seven. The REST channel sends no key a route does not list (issue 20 §3).
ROUTE_SCOPE_KEYS: dict[str, tuple[str, ...]] = {
    "amp.forget": ("agent_id", "group_id", "workspace_id", "user_id", "app_id"),
    "amp.stats": ("agent_id", "group_id", "workspace_id", "user_id", "app_id"),
    "amp.pin": ("agent_id", "group_id", "workspace_id", "user_id", "app_id"),
    "amp.import": SCOPE_KEYS,
}
ROUTES = {
    "amp.forget": "DELETE /v1/memories/{id}",
    "amp.stats": "GET /v1/memories/stats",
    "amp.pin": "PUT /v1/memories/{id}/pin",
    "amp.import": "POST /v1/memories/import",
}
NEXT_CURSOR_HEADER = "x-amp-next-cursor"
#: The verbs that may store a memory: one whose answer was lost may have left a memory nobody knows.
#: (``amp.forget`` is told too: a forget that failed leaves its memory for the cleanup.)
STORING_VERBS = frozenset({"amp.encode", "amp.import", "amp.consolidate"})

#: Told ``(channel, verb, arguments)`` of a storing verb whose answer never came, or a failed forget.
BrokenWrite = Callable[[str, str, dict[str, Any]], None]


class Value(dict[str, Any]):
    """A verb's successful output that keeps the exchange it came from, so a check names the value it
    judges as its evidence (``amp.expect(value.get("id"), message, value)``)."""

    exchange: Exchange | None

    def __init__(self, value: dict[str, Any], exchange: Exchange | None) -> None:
        super().__init__(value)
        self.exchange = exchange


class Rows(list[Any]):
    """Rows of one verb's output (recall results, export lines), with the exchange they came from."""

    exchange: Exchange | None

    def __init__(self, rows: list[Any], exchange: Exchange | None) -> None:
        super().__init__(rows)
        self.exchange = exchange


class NotOnChannel(Exception):
    """The arguments cannot be expressed on this channel (a REST path needs an id, a query string
    cannot carry an object): the check skips that channel instead of sending something else."""


@dataclass
class VerbResult:
    """What one verb call produced, parsed, with the evidence it came from."""

    channel: str
    verb: str
    exchange: Exchange
    value: dict[str, Any] | None = None  # the verb's output on success
    error: dict[str, Any] | None = None  # the AmpErrorData (or what stands for it) on failure
    error_code: str | None = None  # amp_error_code of the failure
    transport_code: int | None = None  # JSON-RPC error code or HTTP status
    error_key: str | None = None  # REST: which body member held the code (C3)
    problems: list[str] = field(default_factory=list)  # transport-shape violations seen while parsing

    @property
    def ok(self) -> bool:
        return self.value is not None

    def describe(self) -> str:
        if self.ok:
            return f"{self.verb} over {self.channel}: {json.dumps(self.value, ensure_ascii=False)[:300]}"
        code = f" ({self.transport_code})" if self.transport_code is not None else ""
        return f"{self.verb} over {self.channel}: error {shown(self.error_code)}{code}"


# -- MCP ------------------------------------------------------------------------------------------


class McpChannel:
    """Verbs as MCP tools over a started, initialised :class:`McpSession`."""

    name = MCP

    def __init__(
        self,
        session: McpSession,
        log: list[Exchange],
        deadline: float | None = None,
        output_schemas: dict[str, Any] | None = None,
    ):
        self.session = session
        self.log = log
        self.deadline = deadline
        self.output_schemas = output_schemas or {}  # each tool's declared outputSchema (tools/list)
        self.on_broken: BrokenWrite | None = None
        self.on_forgotten: Callable[[str], None] | None = None
        """Told the id of each memory a forget over this channel removed."""

    def call(self, verb: str, arguments: dict[str, Any]) -> VerbResult:
        try:
            exchange = self.session.call_tool(verb, arguments, log=self.log, deadline=self.deadline)
        except ToolError as failure:
            _tell_broken(self.on_broken, MCP, verb, arguments, failure)
            raise
        version = (self.session.initialize_result or {}).get("protocolVersion")
        result = parse_tool_reply(
            verb,
            exchange.message or {},
            exchange,
            version=version if isinstance(version, str) else None,
            output_schema=self.output_schemas.get(verb),
        )
        memory_id = arguments.get("id")
        if verb == "amp.forget" and result.ok and isinstance(memory_id, str) and self.on_forgotten:
            self.on_forgotten(memory_id)
        return result


#: The first MCP revision with ``structuredContent`` and ``outputSchema`` (tools/call results).
STRUCTURED_CONTENT_SINCE = "2025-06-18"


def parse_tool_reply(
    verb: str,
    message: dict[str, Any],
    exchange: Exchange,
    *,
    version: str | None = None,
    output_schema: Any = None,
) -> VerbResult:
    """Turn a ``tools/call`` reply frame into a :class:`VerbResult`, noting every shape problem.

    ``version`` is the MCP protocol version the server negotiated and ``output_schema`` the tool's
    declared ``outputSchema``: they say how ``structuredContent`` is judged (issue 20 §3)."""
    result = VerbResult(MCP, verb, exchange)
    error = message.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        result.transport_code = code if type(code) is int else None
        data = error.get("data")
        if isinstance(data, dict):
            result.error = data
            found = data.get("amp_error_code")
            result.error_code = found if isinstance(found, str) else None
        else:
            result.error = {"message": error.get("message")}
            result.problems.append("the JSON-RPC error has no AmpErrorData in `data`")
        return result
    body = message.get("result")
    if not isinstance(body, dict):
        result.problems.append("the reply has neither a `result` object nor an `error` object")
        result.error = {}
        return result
    parsed, problems = _tool_payload(body, version, output_schema)
    result.problems += problems
    if body.get("isError") is True:
        result.problems.append("the failure came as an `isError` tool result, not a JSON-RPC error frame")
        result.error = parsed if isinstance(parsed, dict) else {"message": str(parsed)}
        found = result.error.get("amp_error_code")
        result.error_code = found if isinstance(found, str) else None
        return result
    if isinstance(parsed, dict):
        result.value = parsed
    else:
        result.problems.append("the tool result holds no JSON object")
        result.error = {}
    return result


def _tool_payload(body: dict[str, Any], version: str | None, output_schema: Any) -> tuple[Any, list[str]]:
    """The verb output carried by a tool result: the JSON of its first text block (TOOLS-14).

    ``structuredContent`` is judged only under an MCP version that has it (2025-06-18 on; earlier,
    the text block is the result and an extra member is ignored): against the tool's own declared
    ``outputSchema`` when there is one (an SDK's ``{"result": ...}`` wrapper matches its wrapper
    schema), else it must equal the JSON of the text block."""
    problems: list[str] = []
    text_value: Any = None
    has_text = False
    content = body.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                has_text = True
                try:
                    text_value = json.loads(block["text"])
                except (ValueError, RecursionError):
                    problems.append("the text content block is not JSON")
                    text_value = {"message": block["text"]}
                break
    structured = body.get("structuredContent")
    if not has_text:
        problems.append("the tool result has no `text` content block")
        return structured, problems
    if structured is None or version is None or version < STRUCTURED_CONTENT_SINCE:
        return text_value, problems
    if isinstance(output_schema, dict) and output_schema:
        mismatch = declared_schema_problems(output_schema, structured)
        if mismatch:
            problems.append(
                "`structuredContent` does not match the tool's declared outputSchema: " + "; ".join(mismatch)
            )
    elif structured != text_value:
        problems.append("`structuredContent` differs from the JSON of the text block")
    return text_value, problems


# -- REST -----------------------------------------------------------------------------------------


def flat_scope(arguments: dict[str, Any], verb: str | None = None) -> dict[str, str]:
    """The scope keys as query parameters (or a flat body): from ``scope``, else the flat ``agent_id``.

    With ``verb``, a key the pinned OpenAPI does not list for its route cannot travel (NotOnChannel)."""
    scope = arguments.get("scope")
    if scope is None:
        agent = arguments.get("agent_id")
        if agent is None:
            return {}
        if not isinstance(agent, str):
            raise NotOnChannel("a non-string agent_id cannot travel as a query parameter")
        return {"agent_id": agent}
    if not isinstance(scope, dict):
        raise NotOnChannel("a scope that is not an object cannot travel as query parameters")
    flat: dict[str, str] = {}
    listed = ROUTE_SCOPE_KEYS.get(verb or "", SCOPE_KEYS)
    for key, value in scope.items():
        if not isinstance(value, str):
            raise NotOnChannel("a non-string scope value cannot travel as a query parameter")
        if key in SCOPE_KEYS and key not in listed:
            raise NotOnChannel(f"the pinned OpenAPI lists no `{key}` parameter on {ROUTES[str(verb)]}")
        flat[str(key)] = value
    return flat


def _path_id(arguments: dict[str, Any]) -> str:
    memory_id = arguments.get("id")
    if not isinstance(memory_id, str) or not memory_id:
        raise NotOnChannel("the REST route carries the id in its path; there is no request without one")
    return quote(memory_id, safe="")


class RestChannel:
    """Verbs as the REST routes of Appendix C (``schema/amp-openapi.yaml``), through the recording client."""

    name = REST

    def __init__(self, client: Client):
        self.client = client
        self.on_broken: BrokenWrite | None = None

    def call(self, verb: str, arguments: dict[str, Any]) -> VerbResult:
        """The verb over its route. A read is sent again after a transport failure (``repeatable``);
        a write never is: its ``AmbiguousExchange`` goes up (the check is re-run), and the scope it
        named is swept at the end."""
        try:
            reply = self._send(verb, arguments)
        except ToolError as failure:
            _tell_broken(self.on_broken, REST, verb, arguments, failure)
            raise
        if reply.exchange.retry_of is not None and verb in STORING_VERBS:  # the first may have stored
            _tell_broken(self.on_broken, REST, verb, arguments, None)
        if verb == "amp.export" and 200 <= reply.status < 300:
            return self._export_result(reply)
        return parse_rest_reply(verb, reply)

    def _send(self, verb: str, arguments: dict[str, Any]) -> Reply:
        client = self.client
        if verb == "amp.encode":
            return client.post("/v1/memories", arguments, root=True)
        if verb == "amp.recall":
            return client.post("/v1/memories/recall", arguments, root=True, repeatable=True)
        if verb == "amp.consolidate":
            return client.post("/v1/memories/consolidate", arguments, root=True)
        if verb == "amp.export":
            return client.post("/v1/memories/export", arguments, root=True, repeatable=True)
        if verb == "amp.forget":
            path = f"/v1/memories/{_path_id(arguments)}"
            return client.delete(path, params=flat_scope(arguments, verb), root=True)
        if verb == "amp.stats":
            scope = flat_scope(arguments, verb)
            return client.get("/v1/memories/stats", params=scope, root=True, repeatable=True)
        if verb == "amp.pin":
            path = f"/v1/memories/{_path_id(arguments)}/pin"
            return client.request("PUT", path, json_body=flat_scope(arguments, verb), root=True)
        if verb == "amp.import":
            params: dict[str, Any] = dict(flat_scope(arguments, verb))
            for policy in ("on_conflict", "scope_remap"):
                if policy in arguments:
                    value = arguments[policy]
                    if not isinstance(value, str):
                        raise NotOnChannel(f"a non-string {policy} cannot travel as a query parameter")
                    params[policy] = value
            document = arguments.get("ndjson", "")
            if not isinstance(document, str):
                raise NotOnChannel("the REST import body is the NDJSON text itself")
            return client.request(
                "POST",
                "/v1/memories/import",
                content=document.encode("utf-8"),
                params=params,
                headers={"Content-Type": "application/x-ndjson"},
                root=True,
            )
        raise NotOnChannel(f"{verb} has no REST route in AMP v1.1")

    def _export_result(self, reply: Reply) -> VerbResult:
        """REST export: the NDJSON body and the cursor header, in the MCP result's shape."""
        result = VerbResult(REST, "amp.export", reply.exchange)
        text = reply.text
        lines = [line for line in text.split("\n") if line.strip()]
        value: dict[str, Any] = {"ndjson": text, "count": len(lines)}
        cursor = reply.headers.get(NEXT_CURSOR_HEADER)
        if cursor:
            value["next_cursor"] = cursor
        kind = reply.headers.get("content-type", "")
        if text and "ndjson" not in kind and "jsonl" not in kind:
            shown = kind or "(none)"
            result.problems.append(f"export answered Content-Type {shown}, not application/x-ndjson")
        result.value = value
        return result


def _tell_broken(
    tell: BrokenWrite | None, channel: str, verb: str, arguments: dict[str, Any], failure: ToolError | None
) -> None:
    """Tell the session of a storing verb that may have stored unseen (its answer lost: a transport
    failure, or a repeat), or of a forget that did not certainly happen (any tool error)."""
    if tell is None:
        return
    if verb == "amp.forget" or (
        verb in STORING_VERBS and (failure is None or isinstance(failure, TransportFailure))
    ):
        tell(channel, verb, arguments)


def parse_rest_reply(verb: str, reply: Reply) -> VerbResult:
    """Turn a REST response into a :class:`VerbResult` (error bodies per §3.5 and conflict C3)."""
    result = VerbResult(REST, verb, reply.exchange, transport_code=reply.status)
    try:
        body = json.loads(reply.content) if reply.content else None
    except (ValueError, RecursionError):
        body = None
        result.problems.append("the response body is not JSON")
    kind = reply.headers.get("content-type", "")
    if reply.content and "json" not in kind:
        result.problems.append(f"Content-Type is {kind or '(none)'}, not application/json")
    if 200 <= reply.status < 300:
        if isinstance(body, dict):
            result.value = body
            result.transport_code = None
        else:
            result.problems.append("a successful response whose body is not a JSON object")
            result.error = {}
        return result
    result.error, result.error_code, result.error_key = _rest_error(body)
    if result.error_key is None:
        result.problems.append("the error body carries no `amp_error_code` (nor `code`)")
    return result


def _rest_error(body: Any) -> tuple[dict[str, Any], str | None, str | None]:
    if not isinstance(body, dict):
        return {}, None, None
    for holder, prefix in ((body, ""), (body.get("error"), "error.")):
        if not isinstance(holder, dict):
            continue
        for key in ("amp_error_code", "code"):
            value = holder.get(key)
            if isinstance(value, str):
                return holder, value, prefix + key
    return body, None, None
