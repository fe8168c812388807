"""A Core-level MCP server for tests: the reference server behind a filter that declares ``core``,
lists only the Core verbs, and answers the Full verbs with not_supported (-32002).

With argv[1] ``unknown-tool`` it answers a call of an unlisted Full verb as many MCP SDKs answer a
tool they do not have: JSON-RPC ``-32601`` ("Unknown tool") with no AMP error data (issue 20 §1)."""

import json
import subprocess
import sys

FULL = {"amp.consolidate", "amp.pin", "amp.export", "amp.import"}


def main() -> None:
    unknown_tool = len(sys.argv) > 1 and sys.argv[1] == "unknown-tool"
    server = subprocess.Popen(
        [sys.executable, "-m", "reference_server.amp11", "--mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    for line in sys.stdin:
        try:
            frame = json.loads(line)
        except ValueError:
            frame = {"id": None}  # relayed as is; the server answers it
        if not isinstance(frame, dict):
            frame = {"id": None}
        name = (frame.get("params") or {}).get("name")
        if frame.get("method") == "tools/call" and name in FULL:
            if unknown_tool:
                error = {"code": -32601, "message": f"Unknown tool: {name}"}
            else:
                data = {"amp_error_code": "not_supported", "message": "a Core server"}
                error = {"code": -32002, "message": "not supported", "data": data}
            print(json.dumps({"jsonrpc": "2.0", "id": frame["id"], "error": error}), flush=True)
            continue
        server.stdin.write(line)
        server.stdin.flush()
        if "id" not in frame:
            continue
        reply = json.loads(server.stdout.readline())
        result = reply.get("result") or {}
        if frame.get("method") == "initialize":
            result["serverInfo"]["amp_conformance"] = "core"
        if frame.get("method") == "tools/list":
            result["tools"] = [t for t in result["tools"] if t["name"] not in FULL]
        print(json.dumps(reply), flush=True)
    server.stdin.close()
    server.wait()


if __name__ == "__main__":
    main()
