"""A fake AMP v1.1 MCP server for the verdict-precision tests (issue 20): the reference server behind a
stdio relay that changes one behaviour, picked by argv[1] (comma-separated modes):

``refuse-scope-encode``  an ``amp.encode`` carrying a ``scope`` object is refused ``invalid_request``
                         (only the flat v1.0 ``agent_id`` form stores: one real divergence, AMP11-ENC-01)
``sdk@VERSION``          negotiates MCP ``VERSION``; every tool declares an ``outputSchema`` wrapping the
                         output as ``{"result": ...}`` and every result carries that ``structuredContent``
                         (as MCP SDKs generate), next to the JSON text block
``naive-time``           every ``timestamp`` is written without a UTC offset (``2026-12-01T18:20:47.243471``)
``backend-metadata``     every recalled memory's metadata gains a backend key of the server's own
``visibility-private``   a v1.1-native encode echoes ``visibility: "private"`` (§5 lets a server populate it)
``unwrapped``            with ``sdk@``: ``structuredContent`` is the bare output, against the declared
                         wrapper schema (a real mismatch, AMP11-TOOLS-14)
``drop-malformed``       a line that is not JSON-RPC is silently dropped (never answered)
``banner``               writes one non-JSON line (a start-up banner) on stdout before its first reply
``stall``                ``amp.consolidate`` never answers (an LLM-backed pass slower than any timeout)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from typing import Any

NAIVE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)(?:Z|[+-]\d\d:\d\d)$")


def naive(value: Any) -> Any:
    """``value`` with every date-time string stripped of its offset (inside MXF text too)."""
    if isinstance(value, dict):
        return {k: naive(v) for k, v in value.items()}
    if isinstance(value, list):
        return [naive(v) for v in value]
    if isinstance(value, str):
        match = NAIVE.match(value)
        if match:
            return match.group(1)
        if value.startswith("{") and "\n" in value:  # an MXF document
            lines = [
                json.dumps(naive(json.loads(line))) if line.strip() else line for line in value.split("\n")
            ]
            return "\n".join(lines)
    return value


def main() -> None:
    modes = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else set()
    version = next((m.split("@", 1)[1] for m in modes if m.startswith("sdk@")), None)
    server = subprocess.Popen(
        [sys.executable, "-m", "reference_server.amp11", "--mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    if "banner" in modes:
        print("memory server v0 ready", flush=True)
    for line in sys.stdin:
        try:
            frame = json.loads(line)
        except ValueError:
            frame = {"id": None}
        if not isinstance(frame, dict):
            frame = {"id": None}
        method = frame.get("method")
        params = frame.get("params") if isinstance(frame.get("params"), dict) else {}
        name = params.get("name")
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        if method == "tools/call" and name == "amp.consolidate" and "stall" in modes:
            time.sleep(3600)
        refused = "refuse-scope-encode" in modes and "scope" in arguments
        if method == "tools/call" and name == "amp.encode" and refused:
            data = {"amp_error_code": "invalid_request", "message": "use the flat agent_id"}
            error = {"code": -32602, "message": "invalid params", "data": data}
            print(json.dumps({"jsonrpc": "2.0", "id": frame["id"], "error": error}), flush=True)
            continue
        server.stdin.write(line)
        server.stdin.flush()
        if "id" not in frame:
            continue
        if method is None and "drop-malformed" in modes:
            server.stdout.readline()  # the server's answer to a malformed line, never relayed
            continue
        reply = json.loads(server.stdout.readline())
        result = reply.get("result")
        if isinstance(result, dict):
            if method == "initialize" and version:
                result["protocolVersion"] = version
            if method == "tools/list" and version:
                for tool in result.get("tools", []):
                    tool["outputSchema"] = {
                        "type": "object",
                        "properties": {"result": {"type": "object"}},
                        "required": ["result"],
                    }
            if method == "tools/call":
                blocks = result.get("content") or []
                text = blocks[0].get("text") if blocks and isinstance(blocks[0], dict) else None
                value = json.loads(text) if isinstance(text, str) else None
                if isinstance(value, dict) and not result.get("isError"):
                    if "naive-time" in modes:
                        value = naive(value)
                    if "backend-metadata" in modes and name == "amp.recall":
                        for item in value.get("results", []):
                            item["metadata"] = {**(item.get("metadata") or {}), "backend.vector_norm": 0.5}
                    if "visibility-private" in modes and name == "amp.encode" and "private" not in arguments:
                        value["visibility"] = "private"
                    blocks[0]["text"] = json.dumps(value)
                    if version:
                        wrapped = "unwrapped" not in modes
                        result["structuredContent"] = {"result": value} if wrapped else value
                    elif "structuredContent" in result:
                        result["structuredContent"] = value  # the reference's copy, kept equal
        print(json.dumps(reply), flush=True)
    server.stdin.close()
    server.wait()


if __name__ == "__main__":
    main()
