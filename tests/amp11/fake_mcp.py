"""A tiny stdio MCP server for client tests: behaviour picked by argv[1].

Modes: ``good`` (answers initialize, tools/list, tools/call by echoing arguments; logs to stderr and
sends a notification before each reply), ``wrong-id`` (replies carry another id), ``string-id``
(echoes the id as a string), ``ping`` (asks the client for a ping before answering tools/call),
``die-on-call`` (exits when a tools/call arrives), ``noisy`` (writes a banner line before replies).
"""

import json
import sys
from typing import Any


def send(message: Any) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "good"
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            frame = json.loads(line)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
            continue
        if "id" not in frame:
            continue
        method = frame.get("method")
        rid = frame["id"]
        if method is None:
            continue  # a reply to our ping
        print(f"log: handling {method}", file=sys.stderr, flush=True)
        send(
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": method}}
        )
        if mode == "noisy":
            sys.stdout.write("banner: not json\n")
            sys.stdout.flush()
        if mode == "wrong-id":
            rid = rid + 1000
        if mode == "string-id":
            rid = str(rid)
        if method == "initialize":
            result = {
                "protocolVersion": "2025-03-26",
                "capabilities": {"tools": {}},
                "serverInfo": {
                    "name": "fake",
                    "version": "0",
                    "amp_version": "1.1.0",
                    "amp_conformance": "core",
                },
            }
            send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [{"name": "echo", "inputSchema": {}}]}})
        elif method == "tools/call":
            if mode == "die-on-call":
                sys.exit(4)
            if mode == "ping":
                send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
                reply = json.loads(sys.stdin.readline())
                assert reply.get("id") == "srv-1" and reply.get("result") == {}, reply
            text = json.dumps(frame["params"]["arguments"], ensure_ascii=False)
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})


if __name__ == "__main__":
    main()
