"""``python -m reference_server.amp11``: serve AMP v1.1 over MCP stdio, REST, or both over one store.

    python -m reference_server.amp11 --mcp                      # MCP on stdin/stdout
    python -m reference_server.amp11 --rest-port 8766           # REST on 127.0.0.1:8766
    python -m reference_server.amp11 --mcp --rest-port 8766     # both, one store (REST in a thread)
    python -m reference_server.amp11 --list-faults [--json]

Environment: ``AMP11_REFERENCE_FAULTS`` (comma-separated fault names), ``AMP11_REFERENCE_NOT_FOUND``
(``channel``, ``status`` or ``error``: see ``Settings``), ``AMP11_REFERENCE_DRAFT`` (``1`` or ``0``),
``AMP11_REFERENCE_LEVEL`` (``full``, the default, or ``core``: the four Core verbs alone).
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from reference_server.amp11.backend import Backend
from reference_server.amp11.context import ConfigError, Settings, faults_from_env
from reference_server.amp11.faults import FAULTS, MISBEHAVIOURS
from reference_server.amp11.mcp import EXIT_STATUS, serve_mcp
from reference_server.amp11.store import Store

if TYPE_CHECKING:
    import uvicorn

PROG = "amp11-reference-server"
STARTUP_SECONDS = 10.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="In-memory AMP v1.1 reference server (Full level; AMP11_REFERENCE_LEVEL=core serves "
        "the Core verbs alone).",
    )
    parser.add_argument("--mcp", action="store_true", help="serve the MCP channel on stdin/stdout")
    parser.add_argument("--rest-port", type=int, metavar="PORT", help="serve the REST channel on this port")
    parser.add_argument("--host", default="127.0.0.1", help="REST interface to bind (default 127.0.0.1)")
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="log level on stderr (default warning)",
    )
    parser.add_argument(
        "--list-faults", action="store_true", help="list the faults AMP11_REFERENCE_FAULTS accepts"
    )
    parser.add_argument("--json", action="store_true", help="with --list-faults: print JSON")
    return parser


def list_faults(as_json: bool) -> str:
    rows = [(fault, "fault") for fault in FAULTS.values()] + [
        (fault, "misbehaviour") for fault in MISBEHAVIOURS.values()
    ]
    if as_json:
        return json.dumps(
            [
                {"name": f.name, "requirement": f.requirement, "kind": kind, "description": f.description}
                for f, kind in rows
            ],
            indent=2,
        )
    width = max(len(f.name) for f, _ in rows)
    marks = {"fault": "", "misbehaviour": " [process misbehaviour]"}
    return "\n".join(
        f"{f.name:<{width}}  {f.requirement:<16} {f.description}{marks[kind]}" for f, kind in rows
    )


def _rest_server(backend: Backend, host: str, port: int, log_level: str) -> uvicorn.Server:
    import uvicorn  # only when the REST channel is asked for: the MCP channel starts faster without it

    from reference_server.amp11.rest import create_rest_app

    app = create_rest_app(backend.store, backend.faults, backend.settings)
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, log_level=log_level)
    return uvicorn.Server(config)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list_faults:
        try:
            print(list_faults(args.json), flush=True)
        except BrokenPipeError:  # `--list-faults | head`: the reader has what it wanted
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # no second BrokenPipe when Python flushes at exit
        return 0
    if not args.mcp and args.rest_port is None:
        print(f"{PROG}: choose --mcp and/or --rest-port PORT", file=sys.stderr)
        return 2
    try:
        faults = faults_from_env(os.environ)
        settings = Settings.from_env(os.environ)
    except ConfigError as exc:
        print(f"{PROG}: configuration error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format=f"{PROG}: %(message)s")
    if args.mcp and faults.on("mcp-exit"):
        print(f"{PROG}: mcp-exit: exiting at once", file=sys.stderr)
        return EXIT_STATUS
    backend = Backend(Store(), faults, settings)
    rest = f"{args.host}:{args.rest_port}" if args.rest_port is not None else "off"
    print(
        f"{PROG}: mcp={'on' if args.mcp else 'off'} rest={rest} not_found={settings.not_found} "
        f"level={settings.level} "
        f"draft={'on' if settings.draft else 'off'} faults={', '.join(faults) or 'none'}",
        file=sys.stderr,
        flush=True,
    )
    server = None
    if args.rest_port is not None:
        server = _rest_server(backend, args.host, args.rest_port, args.log_level)
        if not args.mcp:
            server.run()
            return 0
        thread = threading.Thread(target=server.run, name="amp11-rest", daemon=True)
        thread.start()
        deadline = time.monotonic() + STARTUP_SECONDS
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not server.started:
            # e.g. the port is taken by a sibling process started with the same command line: the MCP
            # channel is still worth serving (a suite may start fresh MCP sessions with one command)
            print(f"{PROG}: the REST channel did not start on {rest}; serving MCP only", file=sys.stderr)
            server.should_exit = True
            server = None
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n")
    status = serve_mcp(backend, stdin, stdout)
    if server is not None:
        server.should_exit = True
    return status


if __name__ == "__main__":
    raise SystemExit(main())
