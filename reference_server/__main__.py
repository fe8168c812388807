"""``python -m reference_server``: the AMP v0.1.0 reference server (see ``reference_server.amp01``)."""

from __future__ import annotations

from reference_server.amp01.__main__ import main

if __name__ == "__main__":
    raise SystemExit(main())
