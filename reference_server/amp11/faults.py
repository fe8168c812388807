"""Named, deliberate deviations from AMP v1.1, and MCP-process misbehaviours.

Each fault models one bug a real AMP v1.1 backend could ship; the suite is self-tested by switching one on
and proving that a check citing the fault's requirement fails. ``MISBEHAVIOURS`` are not protocol bugs but
broken processes (hang, exit, garbage on stdout) for the suite's robustness tests: they end a run in error,
not in a failed check. Both are off unless named in ``AMP11_REFERENCE_FAULTS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from reference_server._faults import Fault, FaultSwitches, UnknownFaultError

__all__ = ["ENV_VAR", "FAULTS", "MISBEHAVIOURS", "NO_FAULTS", "Fault", "Faults", "UnknownFaultError"]

ENV_VAR = "AMP11_REFERENCE_FAULTS"


_FAULTS: tuple[Fault, ...] = (
    # MCP session and tool list (spec §3.4, the MCP handshake)
    Fault("serverinfo-no-amp-version", "AMP11-INIT-02", "initialize's serverInfo has no amp_version."),
    Fault(
        "notification-answered", "AMP11-INIT-06", "notifications/initialized is answered with a result frame."
    ),
    Fault(
        "response-id-stringified", "AMP11-INIT-07", 'Responses carry the request id as a string (1 -> "1").'
    ),
    Fault(
        "unknown-method-wrong-code",
        "AMP11-INIT-09",
        "An unknown JSON-RPC method is answered -32600, not -32601.",
    ),
    Fault("annotations-missing", "AMP11-TOOLS-04", "tools/list publishes no annotations block."),
    Fault("forget-not-destructive", "AMP11-TOOLS-07", "amp.forget is published with destructiveHint false."),
    # Scopes (spec §2.3, §3.3.4 strict AND)
    Fault(
        "refining-only-scope-accepted",
        "AMP11-SCOPE-01",
        "A scope with only refining keys (session_id, app_id, org_id) is accepted.",
    ),
    Fault("recall-scope-leak", "AMP11-SCOPE-04", "amp.recall searches the whole store, whatever the scope."),
    Fault(
        "scope-not-strict-and",
        "AMP11-SCOPE-04",
        "Scope keys missing on a stored memory act as wildcards: {agent_id} memories match "
        "{agent_id, user_id} requests.",
    ),
    Fault(
        "recall-ignores-refining-keys",
        "AMP11-SCOPE-05",
        "amp.recall matches on isolating keys only: session_id, app_id and org_id do not narrow.",
    ),
    Fault("forget-ignores-scope", "AMP11-SCOPE-07", "amp.forget deletes a memory of any scope by id."),
    Fault("pin-ignores-scope", "AMP11-SCOPE-08", "amp.pin pins a memory of any scope by id."),
    Fault("stats-counts-other-scopes", "AMP11-SCOPE-09", "amp.stats counts every memory in the store."),
    Fault("export-scope-leak", "AMP11-SCOPE-10", "amp.export emits the rows of every scope."),
    Fault(
        "consolidate-ignores-scope",
        "AMP11-SCOPE-14",
        "amp.consolidate archives duplicates in every scope, not only the requested one.",
    ),
    # Content fidelity (spec §2.1, §4)
    Fault(
        "unicode-mangled",
        "AMP11-FID-02",
        "Characters outside the Basic Multilingual Plane (emoji, hieroglyphs) are stored as U+FFFD.",
    ),
    Fault(
        "source-label-overwritten",
        "AMP11-ENC-07",
        "amp.encode stores every memory with source user_stated, whatever label the caller gave.",
    ),
    Fault("metadata-dropped", "AMP11-FID-04", "Custom (non-amp.*) metadata keys are dropped on encode."),
    Fault(
        "reserved-metadata-stringified",
        "AMP11-FID-05",
        'Reserved amp.* values are stored as JSON text (a scalar-only store): 0.9 comes back as "0.9".',
    ),
    # Verbs
    Fault("top-k-ignored", "AMP11-REC-02", "amp.recall returns every match, ignoring top_k."),
    Fault(
        "recall-unsorted",
        "AMP11-REC-03",
        "amp.recall sorts by ascending score (a distance read as a similarity): the best match comes last.",
    ),
    Fault("archived-in-default-recall", "AMP11-REC-04", "amp.recall returns archived memories by default."),
    Fault("status-filter-ignored", "AMP11-REC-06", "amp.recall ignores filters.status."),
    Fault(
        "timestamp-filters-ignored",
        "AMP11-REC-07",
        "amp.recall ignores timestamp_after and timestamp_before.",
    ),
    Fault("forget-archives", "AMP11-FGT-04", "amp.forget archives the memory instead of deleting it."),
    Fault("stats-ignores-forget", "AMP11-STAT-02", "Forgotten memories still count in memory_count."),
    Fault(
        "pin-not-protecting",
        "AMP11-CONS-04",
        "amp.consolidate drops pins: pinned memories come back active, superseded ones are archived.",
    ),
    Fault("pin-not-persisted", "AMP11-PIN-01", "amp.pin answers pinned but the memory stays active."),
    # MXF (spec §3.3.4, §3.3.5, Appendix A)
    Fault("export-page-size-exceeded", "AMP11-EXP-04", "amp.export ignores page_size and emits every row."),
    Fault("export-cursor-skips", "AMP11-EXP-05", "Each export page after the first skips one row."),
    Fault(
        "bad-cursor-backend-error",
        "AMP11-EXP-06",
        "A malformed export cursor is a backend_error instead of invalid_request.",
    ),
    Fault(
        "import-skip-overwrites",
        "AMP11-IMP-03",
        "on_conflict skip replaces existing rows (and counts them imported).",
    ),
    Fault(
        "import-cross-scope-accepted",
        "AMP11-IMP-05",
        "A row whose scope conflicts with the request scope is imported under its own scope.",
    ),
    Fault(
        "import-strict-remap-inherits",
        "AMP11-IMP-06",
        "scope_remap strict fills a row's missing scope keys from the request instead of failing it.",
    ),
    Fault("import-line-zero-based", "AMP11-IMP-08", "errors[].line counts from 0."),
    Fault(
        "import-atomic-no-rollback",
        "AMP11-IMP-10",
        "on_conflict fail_atomic reports a rollback but keeps the rows before the failure.",
    ),
    # Errors (spec §3.5)
    Fault(
        "invalid-request-wrong-rpc-code",
        "AMP11-ERR-01",
        "invalid_request is sent as JSON-RPC -32603 instead of -32602.",
    ),
    Fault("rest-invalid-request-422", "AMP11-ERR-01", "REST validation failures answer 422, not 400."),
    Fault("error-data-missing", "AMP11-ERR-05", "JSON-RPC error frames carry no data (no amp_error_code)."),
    Fault(
        "rest-error-body-framework",
        "AMP11-ERR-06",
        'REST error bodies are the framework default {"detail": "..."}, without the AMP code.',
    ),
    Fault(
        "rest-not-found-400",
        "AMP11-FGT-02",
        "REST forget and pin of an unknown id answer 400 invalid_request.",
    ),
    # v1.0 compatibility (spec §5)
    Fault("flat-agent-id-refused", "AMP11-COMPAT-01", "A flat root agent_id without scope is refused."),
    Fault("legacy-private-refused", "AMP11-COMPAT-03", "amp.encode refuses the deprecated private field."),
    Fault(
        "visibility-filter-refused",
        "AMP11-COMPAT-05",
        "amp.recall refuses the deprecated filters.visibility with invalid_request.",
    ),
    # Both channels
    Fault(
        "channels-separate-stores",
        "AMP11-XCH-01",
        "The REST channel gets a store of its own: data written over MCP is invisible over REST.",
    ),
    # Input validation, one fault per class the fuzz area finds (both channels unless said)
    Fault(
        "minimum-not-enforced",
        "AMP11-REC-09",
        "Input validation ignores `minimum`: top_k 0 and page_size 0 are accepted.",
    ),
    Fault(
        "enum-backend-error",
        "AMP11-CONS-03",
        "A value outside an input enum (depth, on_conflict, scope_remap) is answered backend_error, "
        "not invalid_request.",
    ),
    Fault(
        "type-coerced",
        "AMP11-REC-09",
        'Wrongly typed scalars are coerced instead of refused: top_k "1" is 1, force "yes" is true.',
    ),
    Fault(
        "recall-crash-non-ascii",
        "AMP11-REST-11",
        "amp.recall crashes on a (schema-valid) query holding a character outside ASCII: a bare HTTP 500 "
        "over REST, JSON-RPC -32603 over MCP.",
    ),
    Fault(
        "invalid-input-crashes-mcp",
        "AMP11-ERR-05",
        "The MCP handler crashes on a wrongly typed argument before validating it: JSON-RPC -32603 "
        "without AmpErrorData.",
    ),
)

_MISBEHAVIOURS: tuple[Fault, ...] = (
    Fault("mcp-hang", "AMP11-INIT-01", "The MCP process answers initialize, then never answers again."),
    Fault(
        "mcp-exit", "AMP11-INIT-01", "The MCP process exits at once with status 3, before reading anything."
    ),
    Fault(
        "mcp-garbage", "AMP11-INIT-01", "The MCP process writes a non-JSON line instead of every response."
    ),
)

FAULTS: Mapping[str, Fault] = MappingProxyType({fault.name: fault for fault in _FAULTS})
"""Every protocol fault by name, in a stable order (each caught by a failing check)."""

MISBEHAVIOURS: Mapping[str, Fault] = MappingProxyType({fault.name: fault for fault in _MISBEHAVIOURS})
"""Broken-process modes of the MCP entry point (each ends a run in error, not in a failed check)."""

_KNOWN: Mapping[str, Fault] = MappingProxyType({**FAULTS, **MISBEHAVIOURS})


class Faults(FaultSwitches):
    """The set of faults switched on for one server; ``on(name)`` is how the code asks."""

    known = _KNOWN
    listing = "python -m reference_server.amp11 --list-faults"
    __slots__ = ()


NO_FAULTS = Faults()
