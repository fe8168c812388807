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


class FaultCrash(RuntimeError):
    """An uncaught failure a fault provokes (a bare 500 over REST, -32603 over MCP)."""


_TRUE = ("yes", "true", "1")
_FALSE = ("no", "false", "0")


def _coerced(args: dict[str, Any], errors: list[Any]) -> tuple[dict[str, Any], list[Any]]:
    """The ``type-coerced`` fault: top-level strings where an integer or a boolean is expected are
    converted ("1" -> 1, "yes" -> True) and their type errors dropped."""
    fixed = dict(args)
    kept = []
    for error in errors:
        path = list(error.absolute_path)
        value = fixed.get(path[0]) if len(path) == 1 else None
        if error.validator == "type" and isinstance(value, str):
            if error.validator_value == "integer" and value.strip().lstrip("-").isdigit():
                fixed[path[0]] = int(value)
                continue
            if error.validator_value == "boolean" and value.lower() in (*_TRUE, *_FALSE):
                fixed[path[0]] = value.lower() in _TRUE
                continue
        kept.append(error)
    return fixed, kept


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
        checked: dict[str, Any] = args
        errors = list(_VALIDATORS[name].iter_errors(checked))
        faults = self.faults
        if faults.on("minimum-not-enforced"):
            errors = [e for e in errors if e.validator not in ("minimum", "exclusiveMinimum")]
        if faults.on("type-coerced"):
            checked, errors = _coerced(checked, errors)
        if faults.on("enum-backend-error") and any(e.validator == "enum" for e in errors):
            raise AmpError("backend_error", f"{name}: the backend could not map the value")
        error = best_match(errors)
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path) or "arguments"
            message = (
                error.message if len(error.message) <= _MAX_MESSAGE else error.message[:_MAX_MESSAGE] + "..."
            )
            raise invalid(f"{where}: {message}")
        return checked

    def crash_on_type_error(self, name: str, args: Any) -> None:
        """The ``invalid-input-crashes-mcp`` fault: a wrongly typed argument crashes the handler."""
        validator = _VALIDATORS.get(name)
        if (
            validator is not None
            and isinstance(args, dict)
            and any(error.validator == "type" for error in validator.iter_errors(args))
        ):
            raise FaultCrash(f"{name}: unexpected argument type")

    def call(self, name: str, args: Any, *, legacy: bool = False) -> dict[str, Any]:
        """Run one verb; ``legacy`` marks a v1.0 client (REST header ``X-AMP-Compat: v1.0``)."""
        checked = self.validate(name, args)
        if name == "amp.recall" and self.faults.on("recall-crash-non-ascii"):
            query = checked.get("query")
            if isinstance(query, str) and not query.isascii():
                raise FaultCrash("amp.recall: 'ascii' codec can't encode the query")
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
