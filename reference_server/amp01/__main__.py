"""``python -m reference_server`` / ``amp-reference-server``: serve with uvicorn, or list the faults."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from reference_server.amp01.config import Settings
from reference_server.amp01.config_error import ConfigError
from reference_server.amp01.faults import FAULTS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="amp-reference-server",
        description="In-memory AMP v0.1.0 reference server. Configured by AMP_* environment variables "
        "(see docs/ARCHITECTURE.md).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port to bind (default 8765)")
    parser.add_argument("--log-level", default="info", help="uvicorn log level (default info)")
    parser.add_argument(
        "--list-faults", action="store_true", help="list the faults AMP_REFERENCE_FAULTS accepts"
    )
    parser.add_argument("--json", action="store_true", help="with --list-faults: print JSON")
    return parser


def list_faults(as_json: bool) -> str:
    if as_json:
        return json.dumps(
            [
                {"name": fault.name, "requirement": fault.requirement, "description": fault.description}
                for fault in FAULTS.values()
            ],
            indent=2,
        )
    width = max(len(name) for name in FAULTS)
    lines = [
        f"{fault.name:<{width}}  {fault.requirement:<13} {fault.description}" for fault in FAULTS.values()
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list_faults:
        try:
            print(list_faults(args.json), flush=True)
        except BrokenPipeError:  # `--list-faults --json | head`: the reader left, end quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    try:
        settings = Settings.from_env(os.environ)
    except ConfigError as exc:
        print(f"amp-reference-server: configuration error: {exc}", file=sys.stderr)
        return 2
    import uvicorn

    from reference_server.amp01.app import create_app

    app = create_app(settings)
    faults = ", ".join(sorted(settings.faults)) or "none"
    print(
        f"amp-reference-server: convention={settings.convention} ids={settings.id_form} "
        f"keys={'on' if settings.api_keys_required else 'off'} faults={faults}",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
