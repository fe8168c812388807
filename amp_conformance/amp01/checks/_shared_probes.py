"""Refused probes that checks of several areas send alike, sent once per run through ``amp.shared``.

Each getter sends (or adopts) the same requests for every check that asks, and judges nothing: each
check judges the answers it is about, exactly as it judged the ones it used to send itself. A probe
here changes no cell (an unknown id cannot be changed), so whichever check makes it, the answers are
the same ones. Roles are taken before sharing, as in ``_shared_cells``: agent "a" only.
"""

from __future__ import annotations

from typing import Any

from amp_conformance import Amp
from amp_conformance.amp01.checks._shared_cells import unknown_read
from amp_conformance.amp01.checks._support import Marks, shared_replies
from amp_conformance.engine.client import Reply

#: The body of the PATCH of an unknown id (any valid body: there is no cell to apply it to).
UNKNOWN_PATCH = {"content": {"text": "nobody here"}}


def unknown_probes(amp: Amp) -> tuple[str, dict[str, Reply]]:
    """The run's unknown id (``_shared_cells.unknown_read``, whose GET AMP-READ-10 judges too) and
    agent "a"'s GET, PATCH and DELETE of it by method, the PATCH and DELETE sent once per run after
    the GET: AMP-DEL-08's check and the error table (AMP-ERR-03) each judge these answers. Needs the
    server's conventions (a second agent), as :meth:`Amp.unknown_id` does."""
    unknown, read = unknown_read(amp)

    def make(a: Amp) -> dict[str, Any]:
        marks = Marks(a)
        client = a.as_agent("a")
        path = f"/memories/{unknown}"
        return {"PATCH": marks(client.patch(path, UNKNOWN_PATCH)), "DELETE": marks(client.delete(path))}

    made, replies = shared_replies(amp, "unknown-id:patch-and-delete", make)
    return unknown, {"GET": read, **{method: replies[at] for method, at in made.items()}}
