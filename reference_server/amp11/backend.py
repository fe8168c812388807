"""The one entry both channels call: validate a verb's arguments, run it under the store lock.

Arguments are checked against the verb's input schema (jsonschema) before the verb sees them; any
unexpected exception inside a verb becomes ``backend_error`` (logged to stderr), never a crash.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from reference_server.amp11 import mxf, verbs
from reference_server.amp11.context import Context, Settings
from reference_server.amp11.errors import AmpError, invalid
from reference_server.amp11.faults import NO_FAULTS, Faults
from reference_server.amp11.schemas import VERBS, Verb, input_schema
from reference_server.amp11.store import Store

log = logging.getLogger("amp11.reference")

Handler = Callable[[Context, Mapping[str, Any]], dict[str, Any]]

_HANDLERS: dict[str, Handler] = {
    "amp.encode": verbs.encode,
    "amp.recall": verbs.recall,
    "amp.forget": verbs.forget,
    "amp.stats": verbs.stats,
    "amp.consolidate": verbs.consolidate,
    "amp.pin": verbs.pin,
    "amp.export": mxf.export,
    "amp.import": mxf.import_,
    "amp.update": verbs.update,
    "amp.batch_encode": verbs.batch_encode,
}
_VALIDATORS = {name: Draft202012Validator(input_schema(name, published=False)) for name in VERBS}
_MAX_MESSAGE = 300


class Backend:
    """A store, the faults switched on and the settings: what one server process serves."""

    def __init__(self, store: Store, faults: Faults = NO_FAULTS, settings: Settings | None = None) -> None:
        self.context = Context(store, faults, settings or Settings())

    @property
    def store(self) -> Store:
        return self.context.store

    @property
    def faults(self) -> Faults:
        return self.context.faults

    @property
    def settings(self) -> Settings:
        return self.context.settings

    def verbs(self) -> list[Verb]:
        """The verbs this server publishes (the draft tier only when enabled; Core alone at level core)."""
        if self.settings.level == "core":
            return [verb for verb in VERBS.values() if verb.tier == "core"]
        return [verb for verb in VERBS.values() if verb.tier != "draft" or self.settings.draft]

    def serves(self, name: str) -> bool:
        return any(verb.name == name for verb in self.verbs())

    def validate(self, name: str, args: Any) -> Mapping[str, Any]:
        if not self.serves(name):
            if name in VERBS:
                core = self.settings.level == "core"
                why = "a Core-only server" if core else "v1.2-draft verbs are switched off"
                raise AmpError("not_supported", f"{name} is not served ({why})")
            raise invalid(f"unknown verb {name!r}")
        if not isinstance(args, dict):
            raise invalid("arguments must be a JSON object")
        error = best_match(_VALIDATORS[name].iter_errors(args))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "arguments"
            message = (
                error.message if len(error.message) <= _MAX_MESSAGE else error.message[:_MAX_MESSAGE] + "..."
            )
            raise invalid(f"{where}: {message}")
        return args

    def call(self, name: str, args: Any, *, legacy: bool = False) -> dict[str, Any]:
        """Run one verb; ``legacy`` marks a v1.0 client (REST header ``X-AMP-Compat: v1.0``)."""
        checked = self.validate(name, args)
        with self.store.lock:
            try:
                if name == "amp.recall":
                    return verbs.recall(self.context, checked, legacy=legacy)
                return _HANDLERS[name](self.context, checked)
            except AmpError:
                raise
            except Exception as exc:  # the reference must answer, not crash: report it as the spec says
                log.exception("unexpected failure in %s", name)
                raise AmpError("backend_error", f"{name} failed: {type(exc).__name__}") from exc

    def export_page(self, args: Any, *, default_rows: int | None) -> mxf.Page:
        """The REST export: a page of rows (all of them unless page_size is sent)."""
        checked = self.validate("amp.export", args)
        with self.store.lock:
            try:
                return mxf.export_page(self.context, checked, default_rows=default_rows)
            except AmpError:
                raise
            except Exception as exc:
                log.exception("unexpected failure in amp.export")
                raise AmpError("backend_error", f"amp.export failed: {type(exc).__name__}") from exc
